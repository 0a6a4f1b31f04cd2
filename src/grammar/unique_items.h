// uniqueItems over items no grammar can count: the items of an array opened by a unique-array
// rule's "[" (grammar.h) must be pairwise distinct JSON values. Distinctness of unboundedly many
// strings or objects is not context-free, so the matcher carries it beside its parse stacks: a
// JSON lexer over the bytes inside such arrays knows where each item begins and ends, and the
// byte that would end an item equal to an earlier one of the same array is refused (a string's
// closing quote, a container's closing bracket, the delimiter after a number or literal).
//
// Equality is JSON Schema's: values after parsing, so "\u0041" equals "A", 1 equals 1.0 and
// objects compare without regard to key order. Each finished item is kept in a canonical form
// (nlohmann's dump of the parsed value, integral numbers written as integers).
//
// The lexer trusts the grammar: it only ever sees bytes the parse stacks accepted, which inside
// a unique array are JSON. Limits, both rare in real schemas:
// - the duplicate is refused when it ends. Where the grammar forces a string item to end that
//   way, the matcher's budget-aware mask refuses the token that commits to it
//   (GrammarMatcher::avoid_forced_duplicates); a choice that leads only to duplicates further
//   on, or a non-string item with no other way on (a closed object whose last value is fixed),
//   still dead-ends, and the request fails with the sampler's "every token is banned" error
//   instead of writing a duplicate;
// - a "[" that some parse stacks read as a unique array and others as a plain one (anyOf of two
//   array shapes) is read as a plain one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::grammar {

class UniqueItems {
  enum class Kind : uint8_t { kUnique, kArray, kObject };
  struct Frame {
    Kind kind = Kind::kArray;
    bool item_open = false;  // kUnique: an item began and has not met its "," or "]"
    bool item_done = false;  // kUnique: that item's value is whole (a string closed, ...)
    uint32_t array = 0;      // kUnique: which array (the items' array id)
    size_t item_start = 0;   // kUnique: offset of the item's first byte in text_
  };
  // Where the bytes so far leave the JSON: the open containers from the outermost unique array
  // in (none when outside every unique array), and whether inside a string.
  struct Lexer {
    std::vector<Frame> frames;
    bool in_string = false;
    bool escaped = false;
  };

 public:
  // What the parse stacks say a "[" opens (kUnknown: not asked, when checking a token's bytes
  // ahead of the grammar).
  enum class Opens : uint8_t { kPlain, kUnique, kUnknown };
  // kNearDuplicate (from check(..., true) only): allowed, but it leaves a string item open as
  // a proper prefix of an earlier item, which the grammar may force it to finish.
  enum class Verdict : uint8_t { kAllowed, kDuplicate, kUnsure, kNearDuplicate };

  // Inside at least one unique array: the bytes matter.
  bool active() const { return !now_.frames.empty(); }
  bool inside_string() const { return now_.in_string; }

  // One accepted byte. False when it ends an item equal to an earlier one of its array; the
  // state is then undefined until restore().
  bool accept(uint8_t byte, Opens opens);

  // A point to come back to (after each accepted token, for rollback).
  struct Mark {
    Lexer lexer;
    size_t text = 0, items = 0;
    uint32_t arrays = 0;
  };
  Mark mark() const;
  void restore(const Mark& m);

  // Before a round of check()s in one state: what the string item being written (if any) could
  // still become a duplicate of.
  void prepare_checks();
  // Whether `piece`, accepted next, would end a duplicate item. kUnsure where the answer needs
  // the parse stacks (an array the piece opens and fills itself) or a second item the piece
  // ends: the caller then runs the piece through the grammar and accept().
  Verdict check(std::string_view piece, bool near_duplicates = false);
  // Inside a string item: the pieces that, written next, keep it a proper prefix of an earlier
  // item (each a prefix of what that item still has to write), appended to `pieces`.
  void near_duplicate_pieces(std::vector<std::string_view>* pieces) const;

 private:
  struct Item {
    uint32_t array;
    std::string canonical;
  };

  // The lexer's move on one byte at `offset`; `item_end(frame, end)` is told each item of a
  // unique array that ends (its bytes [frame.item_start, end)) and answers whether it may.
  template <typename ItemEnd>
  Verdict step(Lexer& lx, uint8_t byte, size_t offset, Opens opens, uint32_t& next_array,
               ItemEnd&& item_end);
  bool is_duplicate(uint32_t array, const std::string& canonical) const;
  // Whether `prefix` (a canonical form so far) is a proper prefix of an item of `array`.
  bool extends_to_an_item(uint32_t array, std::string_view prefix) const;
  // Into candidate_: the item's bytes from `start` to `end`, offsets in text_ followed by a
  // piece being checked.
  void item_text(size_t start, std::string_view piece, size_t end);

  Lexer now_;
  std::string text_;  // every byte accepted while active(): item offsets index it
  std::vector<Item> items_;
  uint32_t n_arrays_ = 0;
  // check() scratch and what prepare_checks() found.
  Lexer scratch_;
  std::string candidate_;
  std::string open_string_;  // canonical form of the string item so far, without its end quote
  bool open_string_known_ = false;
  bool open_string_can_repeat_ = true;
};

// Canonical text of one JSON value for equality as JSON Schema defines it; the raw text where
// it does not parse.
std::string canonical_json(std::string_view text);

}  // namespace strata::grammar
