#pragma once
// What the readers generated from schemas/*.schema.json (scripts/contract-codegen.py) are made of:
// one check per JSON Schema keyword they use, each naming the field on a mismatch
// ("PATH: FIELD: expected WHAT"), so the C++ side never reads a field the schema does not describe.

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// `at.name` (or `name` at the top level): the field path the errors name.
std::string contract_field(const std::string& at, std::string_view name);

/// Reads one document (`path` names it in errors, `code` is the ErrorCode of every mismatch).
class ContractReader {
 public:
  ContractReader(std::filesystem::path path, ErrorCode code) : m_path(std::move(path)), m_code(code) {}

  /// The error "PATH: FIELD: expected WHAT".
  Error mismatch(const std::string& field, const std::string& what) const;

  /// The document's version field `field` must be `version` (when present, or always when
  /// `required`): a one-line error naming the document and both versions otherwise.
  Expected<void> check_version(const nlohmann::json& document, std::string_view field, std::string_view version,
                               bool required) const;
  /// additionalProperties: false. The first field of `object` not in `names` is an error.
  Expected<void> known_fields(const nlohmann::json& object, const std::string& at,
                              std::initializer_list<std::string_view> names) const;
  Expected<void> object(const nlohmann::json& value, const std::string& at) const;
  /// An open object's fields not in `names` (kept as read, so a document written again loses none).
  nlohmann::json other_fields(const nlohmann::json& object, std::initializer_list<std::string_view> names) const;

  Expected<std::string> string(const nlohmann::json& value, const std::string& at, std::size_t min_length = 0) const;
  Expected<int64_t> integer(const nlohmann::json& value, const std::string& at,
                            std::optional<int64_t> minimum = std::nullopt) const;
  Expected<double> number(const nlohmann::json& value, const std::string& at,
                          std::optional<double> minimum = std::nullopt) const;
  Expected<bool> boolean(const nlohmann::json& value, const std::string& at) const;
  /// A value the schema leaves open, of JSON type `type` ("" for any).
  Expected<nlohmann::json> any(const nlohmann::json& value, const std::string& at, std::string_view type = "") const;
  /// enum / const on a string.
  Expected<void> one_of(const std::string& value, const std::string& at,
                        std::initializer_list<std::string_view> allowed) const;

  /// items: every element read by `read(element, "at[i]")`, with minItems / maxItems.
  template <class Read>
  auto array(const nlohmann::json& value, const std::string& at, Read read, std::size_t min_items = 0,
             std::size_t max_items = SIZE_MAX) const
      -> Expected<std::vector<typename decltype(read(value, at))::value_type>> {
    using Item = typename decltype(read(value, at))::value_type;
    if (!value.is_array() || value.size() < min_items || value.size() > max_items)
      return std::unexpected(mismatch(at, items_text(min_items, max_items)));
    std::vector<Item> items;
    for (std::size_t i = 0; i < value.size(); ++i) {
      ONNXPROOF_TRY_ASSIGN(Item item, read(value[i], at + "[" + std::to_string(i) + "]"));
      items.push_back(std::move(item));
    }
    return items;
  }

  /// additionalProperties as a schema: an object of name -> value, each read by `read`.
  template <class Read>
  auto map(const nlohmann::json& value, const std::string& at, Read read) const
      -> Expected<std::map<std::string, typename decltype(read(value, at))::value_type>> {
    using Item = typename decltype(read(value, at))::value_type;
    if (!value.is_object()) return std::unexpected(mismatch(at, "an object"));
    std::map<std::string, Item> items;
    for (const auto& [name, element] : value.items()) {
      ONNXPROOF_TRY_ASSIGN(Item item, read(element, contract_field(at, name)));
      items.emplace(name, std::move(item));
    }
    return items;
  }

  /// type: [T, "null"]: nullopt for null.
  template <class Read>
  auto nullable(const nlohmann::json& value, const std::string& at, Read read) const
      -> Expected<std::optional<typename decltype(read(value, at))::value_type>> {
    if (value.is_null()) return std::nullopt;
    ONNXPROOF_TRY_ASSIGN(auto item, read(value, at));
    return std::optional{std::move(item)};
  }

  /// A required property: missing is an error naming it.
  template <class Read>
  auto required(const nlohmann::json& object, const std::string& at, std::string_view name, Read read) const
      -> decltype(read(object, at)) {
    const std::string field = contract_field(at, name);
    const auto found = object.find(name);
    if (found == object.end()) return std::unexpected(mismatch(field, "a value (the field is missing)"));
    return read(*found, field);
  }

  /// A property the document may leave out: nullopt then.
  template <class Read>
  auto optional(const nlohmann::json& object, const std::string& at, std::string_view name, Read read) const
      -> Expected<std::optional<typename decltype(read(object, at))::value_type>> {
    const auto found = object.find(name);
    if (found == object.end()) return std::nullopt;
    ONNXPROOF_TRY_ASSIGN(auto item, read(*found, contract_field(at, name)));
    return std::optional{std::move(item)};
  }

 private:
  static std::string items_text(std::size_t min_items, std::size_t max_items);

  std::filesystem::path m_path;
  ErrorCode m_code;
};

}  // namespace onnxproof
