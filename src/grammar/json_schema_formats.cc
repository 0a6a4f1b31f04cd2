// `format` values as anchored ECMA-262 regexes (compiled by regex_to_gbnf like `pattern`).
// They follow RFC 3339 (date, time, date-time, duration), RFC 3986 (uri, uri-reference), RFC 4122
// (uuid), and the dotted-quad form of IPv4, at least as strictly as ajv's "full" formats, so text
// the grammar admits also passes an asserting validator.
#include <map>
#include <set>

#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_internal.h"

namespace strata::grammar::json_schema_detail {
namespace {

// Days as each month has them; February 29 only in leap years (divisible by 4, centuries only
// when divisible by 400), as ajv-formats checks.
const std::string kDate =
    "(\\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\\d|3[01])|(0[469]|11)-(0[1-9]|[12]\\d|30)|"
    "02-(0[1-9]|1\\d|2[0-8]))|(\\d\\d(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)"
    "-02-29)";
// Second 60 is left out: validators accept a leap second only at 23:59 UTC, which a grammar
// cannot tell from the offset.
const std::string kTime =
    "([01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(\\.\\d{1,9})?([zZ]|[+-]([01]\\d|2[0-3]):[0-5]\\d)";
const std::string kPercent = "%[0-9A-Fa-f]{2}";
const std::string kPchar = "([A-Za-z0-9\\-._~!$&'()*+,;=:@]|" + kPercent + ")";
const std::string kSegment = kPchar + "*";
const std::string kAuthority = "(([A-Za-z0-9\\-._~!$&'()*+,;=:]|" + kPercent + ")*@)?" +
                               "([A-Za-z0-9\\-._~!$&'()*+,;=]|" + kPercent + ")*(:\\d*)?";
const std::string kQueryFragment = "(\\?([A-Za-z0-9\\-._~!$&'()*+,;=:@/?]|" + kPercent +
                                   ")*)?(#([A-Za-z0-9\\-._~!$&'()*+,;=:@/?]|" + kPercent + ")*)?";
// hier-part: "//" authority path-abempty | path-absolute | path-rootless. RFC 3986 also allows
// path-empty ("urn:"), which ajv's uri format rejects.
const std::string kHierPart = "(//" + kAuthority + "(/" + kSegment + ")*|/(" + kPchar + "+(/" +
                              kSegment + ")*)?|" + kPchar + "+(/" + kSegment + ")*)";
// relative-part: like hier-part, but a first segment without ':' (path-noscheme).
const std::string kNoColonPchar = "([A-Za-z0-9\\-._~!$&'()*+,;=@]|" + kPercent + ")";
const std::string kRelativePart = "(//" + kAuthority + "(/" + kSegment + ")*|/(" + kPchar + "+(/" +
                                  kSegment + ")*)?|(" + kNoColonPchar + "+(/" + kSegment + ")*)?)";
const std::string kUri = "[A-Za-z][A-Za-z0-9+.\\-]*:" + kHierPart + kQueryFragment;
const std::string kOctet = "(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const std::string kHex4 = "[0-9a-fA-F]{1,4}";
const std::string kIpv4 = "(" + kOctet + "\\.){3}" + kOctet;
// RFC 4291 section 2.2 text forms (no zone index).
const std::string kIpv6 =
    "((" + kHex4 + ":){7}" + kHex4 + "|(" + kHex4 + ":){1,7}:|(" + kHex4 + ":){1,6}:" + kHex4 +
    "|(" + kHex4 + ":){1,5}(:" + kHex4 + "){1,2}|(" + kHex4 + ":){1,4}(:" + kHex4 + "){1,3}|(" +
    kHex4 + ":){1,3}(:" + kHex4 + "){1,4}|(" + kHex4 + ":){1,2}(:" + kHex4 + "){1,5}|" + kHex4 +
    ":(:" + kHex4 + "){1,6}|:((:" + kHex4 + "){1,7}|:)|(" + kHex4 + ":){6}" + kIpv4 +
    "|::([fF]{4}(:0{1,4})?:)?" + kIpv4 + "|(" + kHex4 + ":){1,4}:" + kIpv4 + ")";
// RFC 6570 level 4 templates: literals and {operator varspec,...} expressions.
const std::string kVarChar = "([A-Za-z0-9_]|" + kPercent + ")";
const std::string kVarSpec = kVarChar + "+(:[1-9][0-9]{0,3}|\\*)?";
const std::string kUriTemplate = "([^\\x00-\\x20\"'<>%\\\\^`{|}]|" + kPercent +
                                 "|\\{[+#./;?&=,!@|]?" + kVarSpec + "(," + kVarSpec + ")*\\})*";
// RFC 3339 appendix A: dur-date / dur-time / dur-week after "P", each unit at most once and in
// order, a smaller unit only after the next larger one.
const std::string kDurTime = "T(\\d+H(\\d+M(\\d+S)?)?|\\d+M(\\d+S)?|\\d+S)";
const std::string kDuration =
    "P((\\d+D|\\d+M(\\d+D)?|\\d+Y(\\d+M(\\d+D)?)?)(" + kDurTime + ")?|" + kDurTime + "|\\d+W)";
const std::string kEmailAtom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-]+";
const std::string kDomainLabel = "[A-Za-z0-9]([A-Za-z0-9\\-]{0,61}[A-Za-z0-9])?";

}  // namespace

std::optional<std::string> format_regex(const std::string& format, bool* unsupported) {
  static const std::map<std::string, std::string> kFormats = {
      {"date", "^" + kDate + "$"},
      {"time", "^" + kTime + "$"},
      {"date-time", "^" + kDate + "[tT]" + kTime + "$"},
      {"email", "^" + kEmailAtom + "(\\." + kEmailAtom + ")*@" + kDomainLabel + "(\\." +
                    kDomainLabel + ")*$"},
      {"uri", "^" + kUri + "$"},
      {"uri-reference", "^(" + kUri + "|" + kRelativePart + kQueryFragment + ")$"},
      {"uuid", "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"},
      {"ipv4", "^" + kIpv4 + "$"},
      {"ipv6", "^" + kIpv6 + "$"},
      {"uri-template", "^" + kUriTemplate + "$"},
      {"duration", "^" + kDuration + "$"},
      // OpenAPI's base64 (RFC 4648 with padding), which validators such as ajv-formats assert.
      {"byte", "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"},
  };
  // Standard formats (drafts 4 to 2020-12) that validators may assert but the grammar does not.
  static const std::set<std::string> kStandardUnenforced = {
      "hostname",     "idn-hostname",          "idn-email", "iri", "iri-reference",
      "json-pointer", "relative-json-pointer", "regex"};
  *unsupported = false;
  if (auto it = kFormats.find(format); it != kFormats.end()) return it->second;
  *unsupported = kStandardUnenforced.count(format) > 0;
  return std::nullopt;
}

namespace {

// Keywords whose value is a schema, an array of schemas, or a map from names to schemas.
const std::set<std::string> kSchemaKeywords = {"items",
                                               "additionalItems",
                                               "additionalProperties",
                                               "not",
                                               "if",
                                               "then",
                                               "else",
                                               "contains",
                                               "propertyNames",
                                               "unevaluatedProperties",
                                               "unevaluatedItems",
                                               "prefixItems",
                                               "allOf",
                                               "anyOf",
                                               "oneOf"};
const std::set<std::string> kSchemaMapKeywords = {
    "properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"};

}  // namespace

void drop_formats(Json& schema) {
  if (!schema.is_object()) return;
  schema.erase("format");
  for (auto& [key, value] : schema.items()) {
    if (kSchemaKeywords.count(key)) {
      if (value.is_array()) {
        for (Json& item : value) drop_formats(item);
      } else {
        drop_formats(value);
      }
    } else if (kSchemaMapKeywords.count(key) && value.is_object()) {
      // dependencies: a schema or a list of names (left alone: not an object).
      for (auto& [name, sub] : value.items()) drop_formats(sub);
    }
  }
}

}  // namespace strata::grammar::json_schema_detail
