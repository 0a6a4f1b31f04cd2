// PNG heatmaps (`strata eval --task --plot`, `strata inspect --plot`): tables of values in [0, 1]
// whose cells are coloured from red (0) through yellow to green (1), each value written in it. Text
// is drawn with a built-in 5x7 bitmap font, so no font library or file is needed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/task_eval.h"
#include "strata/result.h"

namespace strata::bench {

// 8-bit RGB pixels, row by row.
struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// The colour of an accuracy in [0, 1] (clamped).
void accuracy_colour(double accuracy, uint8_t out[3]);

// Draws text (digits, capitals and lower case drawn as capitals, " .%-():/=,") with its top-left
// corner at (x, y), each font pixel as scale x scale pixels; returns the x after it.
int draw_text(Image& image, int x, int y, std::string_view text, int scale, const uint8_t rgb[3]);

// A table of values in [0, 1] as coloured cells, each with its value written in it (NaN: a grey
// cell marked "-"): values is [row][column].
struct Grid {
  std::string title, row_label, col_label;
  std::vector<std::string> row_names, col_names;
  std::vector<double> values;
};
Image render_grid(const Grid& grid);

// The accuracy table of `strata eval --task`: depths as rows, lengths as columns.
Image render_heatmap(const TaskEvalReport& report);

// Encodes the image as an 8-bit RGB PNG file (libpng).
Status write_png(const std::string& path, const Image& image);
Status write_heatmap_png(const std::string& path, const TaskEvalReport& report);

}  // namespace strata::bench
