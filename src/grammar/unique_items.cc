#include "grammar/unique_items.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace strata::grammar {
namespace {

using Json = nlohmann::json;

// Integral numbers as integers, so that 1, 1.0 and 1e0 write the same.
void normalize_numbers(Json& v) {
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
      v = static_cast<int64_t>(d);
    }
  } else if (v.is_structured()) {
    for (Json& child : v) normalize_numbers(child);
  }
}

}  // namespace

std::string canonical_json(std::string_view text) {
  Json v = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) return std::string(text);
  normalize_numbers(v);
  // nlohmann::json keeps object members sorted by key: the dump ignores the written order.
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <typename ItemEnd>
UniqueItems::Verdict UniqueItems::step(Lexer& lx, uint8_t byte, size_t offset, Opens opens,
                                       uint32_t& next_array, ItemEnd&& item_end) {
  std::vector<Frame>& frames = lx.frames;
  const auto open_array = [&]() {
    if (opens == Opens::kPlain) {
      frames.push_back(Frame{Kind::kArray});
    } else {
      frames.push_back(Frame{Kind::kUnique, false, false, next_array++, 0});
    }
  };
  // A string or container value just ended at `end`: when it is an item of the unique array
  // around it, that item is whole.
  const auto value_ended = [&](size_t end) {
    if (frames.empty()) return Verdict::kAllowed;
    Frame& top = frames.back();
    if (top.kind != Kind::kUnique || !top.item_open || top.item_done) return Verdict::kAllowed;
    const Verdict v = item_end(top, end);
    top.item_done = true;
    return v;
  };
  if (frames.empty()) {  // outside every unique array only the "[" of one matters
    if (byte != '[' || opens == Opens::kPlain) return Verdict::kAllowed;
    // A piece that closes the last unique array and opens another: the grammar must say.
    if (opens == Opens::kUnknown) return Verdict::kUnsure;
    open_array();
    return Verdict::kAllowed;
  }
  if (lx.in_string) {
    if (lx.escaped) {
      lx.escaped = false;
    } else if (byte == '\\') {
      lx.escaped = true;
    } else if (byte == '"') {
      lx.in_string = false;
      return value_ended(offset + 1);
    }
    return Verdict::kAllowed;
  }
  if (frames.back().kind == Kind::kUnique) {
    Frame& top = frames.back();
    const bool scalar_open = top.item_open && !top.item_done;
    const bool delimiter =
        byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r' || byte == ',' || byte == ']';
    if (delimiter) {
      // A number or literal ends at the first byte that is not part of it.
      if (scalar_open) {
        const Verdict v = item_end(top, offset);
        if (v != Verdict::kAllowed) return v;
        top.item_done = true;
      }
      if (byte == ',') top.item_open = top.item_done = false;
      if (byte == ']') {
        frames.pop_back();
        return value_ended(offset + 1);
      }
      return Verdict::kAllowed;
    }
    if (!top.item_open) {
      top.item_open = true;
      top.item_done = false;
      top.item_start = offset;
    }
  }
  switch (byte) {
    case '"':
      lx.in_string = true;
      break;
    case '{':
      frames.push_back(Frame{Kind::kObject});
      break;
    case '[':
      open_array();
      break;
    case '}':
    case ']':
      frames.pop_back();
      return value_ended(offset + 1);
    default:
      break;
  }
  return Verdict::kAllowed;
}

bool UniqueItems::is_duplicate(uint32_t array, const std::string& canonical) const {
  for (const Item& item : items_) {
    if (item.array == array && item.canonical == canonical) return true;
  }
  return false;
}

bool UniqueItems::extends_to_an_item(uint32_t array, std::string_view prefix) const {
  for (const Item& item : items_) {
    if (item.array == array && item.canonical.size() > prefix.size() &&
        item.canonical.starts_with(prefix)) {
      return true;
    }
  }
  return false;
}

void UniqueItems::item_text(size_t start, std::string_view piece, size_t end) {
  const size_t base = text_.size();
  candidate_.clear();
  if (start < base) {
    candidate_.append(text_, start).append(piece.substr(0, end - base));
  } else {
    candidate_.append(piece.substr(start - base, end - start));
  }
}

bool UniqueItems::accept(uint8_t byte, Opens opens) {
  if (!active() && !(byte == '[' && opens == Opens::kUnique)) return true;
  const size_t offset = text_.size();
  text_.push_back(static_cast<char>(byte));
  const Verdict v = step(now_, byte, offset, opens, n_arrays_, [&](const Frame& f, size_t end) {
    std::string canonical =
        canonical_json(std::string_view(text_).substr(f.item_start, end - f.item_start));
    if (is_duplicate(f.array, canonical)) return Verdict::kDuplicate;
    items_.push_back({f.array, std::move(canonical)});
    return Verdict::kAllowed;
  });
  return v == Verdict::kAllowed;
}

UniqueItems::Mark UniqueItems::mark() const {
  return Mark{now_, text_.size(), items_.size(), n_arrays_};
}

void UniqueItems::restore(const Mark& m) {
  now_ = m.lexer;
  text_.resize(m.text);
  items_.resize(m.items);
  n_arrays_ = m.arrays;
}

void UniqueItems::prepare_checks() {
  open_string_known_ = false;
  open_string_can_repeat_ = true;
  if (!now_.in_string || now_.escaped || now_.frames.empty()) return;
  const Frame& top = now_.frames.back();
  if (top.kind != Kind::kUnique || !top.item_open || top.item_done) return;
  // The string being written is the item: its canonical form so far is a prefix of the
  // canonical form of every way it can end (dump escapes code point by code point).
  const Json so_far =
      Json::parse(text_.substr(top.item_start) + '"', nullptr, /*allow_exceptions=*/false);
  if (!so_far.is_string()) return;  // ends inside a UTF-8 sequence
  open_string_ = so_far.dump(-1, ' ', false, Json::error_handler_t::replace);
  open_string_.pop_back();
  open_string_known_ = true;
  open_string_can_repeat_ = extends_to_an_item(top.array, open_string_);
}

void UniqueItems::near_duplicate_pieces(std::vector<std::string_view>* pieces) const {
  if (!open_string_known_ || !open_string_can_repeat_) return;
  const uint32_t array = now_.frames.back().array;
  for (const Item& item : items_) {
    if (item.array != array || item.canonical.size() <= open_string_.size() + 1 ||
        !item.canonical.starts_with(open_string_)) {
      continue;
    }
    const std::string_view rest =
        std::string_view(item.canonical)
            .substr(open_string_.size(), item.canonical.size() - open_string_.size() - 1);
    for (size_t n = 1; n <= rest.size(); ++n) pieces->push_back(rest.substr(0, n));
  }
}

UniqueItems::Verdict UniqueItems::check(std::string_view piece, bool near_duplicates) {
  // An item ends at a quote, a closing bracket or a delimiter; outside a string a leading quote
  // only opens one (which matters only when asked about near duplicates). Most pieces hold none
  // of them.
  const size_t from =
      !now_.in_string && !near_duplicates && !piece.empty() && piece[0] == '"' ? 1 : 0;
  if (piece.find_first_of("\"]},\t\n\r ", from) == std::string_view::npos) {
    return Verdict::kAllowed;
  }
  scratch_ = now_;
  uint32_t next_array = n_arrays_;
  const size_t base = text_.size();
  int ends = 0;
  const auto item_end = [&](const Frame& f, size_t end) {
    // An array the piece opened (it may be plain), or a second item in one piece: rare, and
    // the grammar's answer is needed.
    if (f.array >= n_arrays_ || ++ends > 1) return Verdict::kUnsure;
    const std::string_view written = std::string_view(piece).substr(0, end - base);
    if (open_string_known_ && now_.in_string && f.array == now_.frames.back().array &&
        f.item_start == now_.frames.back().item_start) {
      if (!open_string_can_repeat_) return Verdict::kAllowed;
      if (written.find('\\') == std::string_view::npos) {
        candidate_.assign(open_string_).append(written);
        return is_duplicate(f.array, candidate_) ? Verdict::kDuplicate : Verdict::kAllowed;
      }
    }
    item_text(f.item_start, piece, end);
    return is_duplicate(f.array, canonical_json(candidate_)) ? Verdict::kDuplicate
                                                             : Verdict::kAllowed;
  };
  for (size_t i = 0; i < piece.size(); ++i) {
    const Verdict v = step(scratch_, static_cast<uint8_t>(piece[i]), base + i, Opens::kUnknown,
                           next_array, item_end);
    if (v != Verdict::kAllowed) return v;
  }
  if (!near_duplicates || !scratch_.in_string || scratch_.frames.empty()) return Verdict::kAllowed;
  // The piece leaves a string item open: is what it has written so far the start of an earlier
  // item (canonical forms, which agree with the raw text when it has no escape)?
  const Frame& top = scratch_.frames.back();
  if (top.kind != Kind::kUnique || !top.item_open || top.item_done || top.array >= n_arrays_) {
    return Verdict::kAllowed;
  }
  item_text(top.item_start, piece, base + piece.size());
  if (candidate_.find('\\') != std::string::npos) return Verdict::kAllowed;
  return extends_to_an_item(top.array, candidate_) ? Verdict::kNearDuplicate : Verdict::kAllowed;
}

}  // namespace strata::grammar
