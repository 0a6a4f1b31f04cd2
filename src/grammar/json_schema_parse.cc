// JSON text to an ordered_json DOM in time linear in its size (parse_ordered_json in
// json_schema.h): the schema text json_schema_to_gbnf compiles, and the instances the order
// helpers rearrange.
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/compile_meter.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_converter.h"
#include "strata/json_depth.h"

namespace strata::grammar {

namespace {

// An ordered_json DOM from SAX events, with a hash index of the keys of each open object.
class OrderedJsonBuilder {
 public:
  using Json = json_schema_detail::Json;
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  explicit OrderedJsonBuilder(CompileMeter* meter) : meter_(meter) {}

  bool null() { return put(Json(nullptr)) != nullptr; }
  bool boolean(bool v) { return put(Json(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return put(Json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return put(Json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t&) { return put(Json(v)) != nullptr; }
  bool string(string_t& v) { return put(Json(std::move(v))) != nullptr; }
  bool binary(binary_t& v) { return put(Json::binary(std::move(v))) != nullptr; }
  bool start_object(size_t) { return open(Json::object()); }
  bool start_array(size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(string_t& k) {
    Frame& f = frames_.back();
    // The vector under ordered_map: its own emplace and [] would search the keys again.
    auto& members =
        static_cast<std::vector<Json::object_t::value_type>&>(f.node->get_ref<Json::object_t&>());
    const auto [it, inserted] = f.index.emplace(k, members.size());
    if (inserted) members.emplace_back(k, Json());
    value_ = &members[it->second].second;
    return !meter_ || meter_->charge().ok();
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  Json& root() { return root_; }

 private:
  struct Frame {
    Json* node;
    std::unordered_map<std::string, size_t> index;  // objects: key -> member position
  };

  // Stores a value where the document is at; the address stays valid while the value's
  // container is open (only the innermost open container grows).
  Json* put(Json value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json* parent = frames_.back().node;
    if (parent->is_array()) {
      auto& items = parent->get_ref<Json::array_t&>();
      items.push_back(std::move(value));
      return &items.back();
    }
    *value_ = std::move(value);
    return value_;
  }
  bool open(Json container) {
    frames_.push_back({put(std::move(container)), {}});
    return !meter_ || meter_->charge().ok();
  }
  bool close() {
    frames_.pop_back();
    return true;
  }

  CompileMeter* meter_;
  Json root_;
  Json* value_ = nullptr;
  std::vector<Frame> frames_;
};

}  // namespace

Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text, CompileMeter* meter) {
  if (const size_t depth = json_nesting_depth(text); depth > kMaxJsonDepth) {
    return json_schema_detail::too_deep_error(depth);
  }
  OrderedJsonBuilder builder(meter);
  if (!json_schema_detail::Json::sax_parse(text, &builder)) {
    if (meter) STRATA_RETURN_IF_ERROR(meter->status());
    return make_error(ErrorCode::kInvalidArgument, "not valid JSON");
  }
  return std::move(builder.root());
}

}  // namespace strata::grammar
