#include "bench/heatmap.h"

#include <png.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>

namespace strata::bench {
namespace {

// A 5x7 font: seven rows per glyph, bit 4 the leftmost pixel.
struct Glyph {
  char c;
  uint8_t rows[7];
};
constexpr Glyph kFont[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}},
    {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'=', {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08}},
    {'A', {0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11}},
    {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
    {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}},
    {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}},
    {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}},
    {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}},
    {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}},
    {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
};
constexpr int kGlyphW = 5, kGlyphH = 7, kScale = 2;
constexpr int kAdvance = (kGlyphW + 1) * kScale;  // one blank column between glyphs
constexpr int kCellW = 80, kCellH = 30, kMargin = 12;
constexpr uint8_t kBlack[3] = {0, 0, 0}, kGrey[3] = {200, 200, 200};

const uint8_t* glyph_rows(char c) {
  const char upper = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const Glyph& g : kFont) {
    if (g.c == upper) return g.rows;
  }
  return nullptr;  // a space, or a character the font lacks: left blank
}

void fill_rect(Image& image, int x, int y, int w, int h, const uint8_t rgb[3]) {
  for (int yy = std::max(0, y); yy < std::min(image.height, y + h); ++yy) {
    for (int xx = std::max(0, x); xx < std::min(image.width, x + w); ++xx) {
      uint8_t* p = &image.rgb[(static_cast<size_t>(yy) * image.width + xx) * 3];
      std::copy(rgb, rgb + 3, p);
    }
  }
}

int text_width(std::string_view text) { return static_cast<int>(text.size()) * kAdvance; }

std::string format_number(const char* format, double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

void accuracy_colour(double accuracy, uint8_t out[3]) {
  // Red, yellow, green (ColorBrewer's RdYlGn ends and middle), linear between them.
  constexpr double kStops[3][3] = {{215, 48, 39}, {254, 224, 139}, {26, 152, 80}};
  const double a = std::clamp(accuracy, 0.0, 1.0) * 2;
  const int i = std::min(1, static_cast<int>(a));
  const double t = a - i;
  for (int k = 0; k < 3; ++k) {
    out[k] =
        static_cast<uint8_t>(std::lround(kStops[i][k] + t * (kStops[i + 1][k] - kStops[i][k])));
  }
}

int draw_text(Image& image, int x, int y, std::string_view text, int scale, const uint8_t rgb[3]) {
  for (char c : text) {
    if (const uint8_t* rows = glyph_rows(c)) {
      for (int r = 0; r < kGlyphH; ++r) {
        for (int col = 0; col < kGlyphW; ++col) {
          if (rows[r] & (0x10 >> col))
            fill_rect(image, x + col * scale, y + r * scale, scale, scale, rgb);
        }
      }
    }
    x += (kGlyphW + 1) * scale;
  }
  return x;
}

Image render_grid(const Grid& g) {
  const int rows = static_cast<int>(g.row_names.size()),
            cols = static_cast<int>(g.col_names.size());
  const int label_w = text_width(g.row_label) + kMargin;  // the row names' column
  const int line_h = kGlyphH * kScale + kMargin;
  const int grid_x = kMargin + label_w, grid_y = kMargin + 2 * line_h;
  Image image;
  image.width = std::max({grid_x + cols * kCellW + kMargin, text_width(g.title) + 2 * kMargin,
                          grid_x + text_width(g.col_label) + kMargin});
  image.height = grid_y + rows * kCellH + 2 * line_h + kMargin;
  image.rgb.assign(static_cast<size_t>(image.width) * image.height * 3, 255);

  draw_text(image, kMargin, kMargin, g.title, kScale, kBlack);
  draw_text(image, kMargin, grid_y - line_h + kMargin / 2, g.row_label, kScale, kBlack);
  const int text_dy = (kCellH - kGlyphH * kScale) / 2;
  for (int i = 0; i < rows; ++i) {
    const int y = grid_y + i * kCellH;
    draw_text(image, kMargin, y + text_dy, g.row_names[i], kScale, kBlack);
    for (int j = 0; j < cols; ++j) {
      const double a = g.values[static_cast<size_t>(i) * cols + j];
      uint8_t colour[3];
      accuracy_colour(a, colour);
      const int x = grid_x + j * kCellW;
      fill_rect(image, x, y, kCellW - 1, kCellH - 1, std::isnan(a) ? kGrey : colour);
      const std::string number = std::isnan(a) ? "-" : format_number("%.2f", a);
      draw_text(image, x + (kCellW - text_width(number)) / 2, y + text_dy, number, kScale, kBlack);
    }
  }
  const int below = grid_y + rows * kCellH + kMargin / 2;
  for (int j = 0; j < cols; ++j) {
    draw_text(image, grid_x + j * kCellW + (kCellW - text_width(g.col_names[j])) / 2, below,
              g.col_names[j], kScale, kBlack);
  }
  draw_text(image, grid_x, below + line_h, g.col_label, kScale, kBlack);
  return image;
}

Image render_heatmap(const TaskEvalReport& r) {
  Grid g;
  g.title = std::string(long_task_name(r.task)) + " accuracy " +
            format_number("%.2f", r.accuracy()) + " (" + std::to_string(r.correct) + "/" +
            std::to_string(r.total) + ")";
  g.row_label = "depth";
  g.col_label = "length (tokens)";
  for (double d : r.depths) g.row_names.push_back(format_number("%.2f", d));
  for (int length : r.lengths) g.col_names.push_back(std::to_string(length));
  for (const TaskCell& c : r.cells) {
    g.values.push_back(c.total == 0
                           ? std::nan("")
                           : static_cast<double>(c.correct) / static_cast<double>(c.total));
  }
  return render_grid(g);
}

Status write_png(const std::string& path, const Image& image) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return make_error(ErrorCode::kInvalidArgument, "cannot write " + path);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png != nullptr ? png_create_info_struct(png) : nullptr;
  // libpng reports errors by longjmp to here; nothing with a destructor lives in this frame
  // between setjmp and the calls that may jump.
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    return make_error(ErrorCode::kInternal, "libpng failed to write " + path);
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(image.width),
               static_cast<png_uint_32>(image.height), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < image.height; ++y) {
    png_write_row(png, image.rgb.data() + static_cast<size_t>(y) * image.width * 3);
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (std::fclose(file) != 0)
    return make_error(ErrorCode::kInternal, "writing " + path + " failed");
  return ok_status();
}

Status write_heatmap_png(const std::string& path, const TaskEvalReport& report) {
  return write_png(path, render_heatmap(report));
}

}  // namespace strata::bench
