#include "onnxproof/core/contract_reader.h"

#include "onnxproof/core/json_file.h"

namespace onnxproof {

std::string contract_field(const std::string& at, std::string_view name) {
  return at.empty() ? std::string(name) : at + "." + std::string(name);
}

Error ContractReader::mismatch(const std::string& field, const std::string& what) const {
  return field_error(m_path, m_code, field, what);
}

Expected<void> ContractReader::check_version(const nlohmann::json& document, std::string_view field,
                                             std::string_view version, bool required) const {
  const auto found = document.find(field);
  if (found == document.end() && !required) return {};
  const std::string found_text = found == document.end() ? "none"
                                 : found->is_string()    ? "'" + found->get<std::string>() + "'"
                                                         : found->dump();
  if (found != document.end() && found->is_string() && found->get<std::string>() == version) return {};
  return fail(m_code, m_path.string() + ": " + std::string(field) + " is " + found_text + ", this onnxproof reads '" +
                          std::string(version) + "' (the writer comes from another onnxproof version)");
}

Expected<void> ContractReader::known_fields(const nlohmann::json& object, const std::string& at,
                                            std::initializer_list<std::string_view> names) const {
  const nlohmann::json others = other_fields(object, names);  // in key order: the first is the one named
  if (!others.empty())
    return std::unexpected(mismatch(contract_field(at, others.begin().key()), "no such field in this document"));
  return {};
}

nlohmann::json ContractReader::other_fields(const nlohmann::json& object,
                                            std::initializer_list<std::string_view> names) const {
  nlohmann::json others = nlohmann::json::object();
  for (const auto& [name, value] : object.items()) {
    bool known = false;
    for (const auto candidate : names) known = known || candidate == name;
    if (!known) others[name] = value;
  }
  return others;
}

Expected<void> ContractReader::object(const nlohmann::json& value, const std::string& at) const {
  if (!value.is_object()) return std::unexpected(mismatch(at, "an object"));
  return {};
}

Expected<std::string> ContractReader::string(const nlohmann::json& value, const std::string& at,
                                             std::size_t min_length) const {
  if (!value.is_string() || value.get_ref<const std::string&>().size() < min_length)
    return std::unexpected(mismatch(at, min_length > 0 ? "a non-empty string" : "a string"));
  return value.get<std::string>();
}

Expected<int64_t> ContractReader::integer(const nlohmann::json& value, const std::string& at,
                                          std::optional<int64_t> minimum) const {
  if (!value.is_number_integer() || (value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX) ||
      (minimum && value.get<int64_t>() < *minimum)) {
    return std::unexpected(mismatch(at, minimum ? "an integer >= " + std::to_string(*minimum) : "an integer"));
  }
  return value.get<int64_t>();
}

Expected<double> ContractReader::number(const nlohmann::json& value, const std::string& at,
                                        std::optional<double> minimum) const {
  if (!value.is_number() || (minimum && value.get<double>() < *minimum))
    return std::unexpected(mismatch(at, minimum ? "a number >= " + std::to_string(*minimum) : "a number"));
  return value.get<double>();
}

Expected<bool> ContractReader::boolean(const nlohmann::json& value, const std::string& at) const {
  if (!value.is_boolean()) return std::unexpected(mismatch(at, "true or false"));
  return value.get<bool>();
}

Expected<nlohmann::json> ContractReader::any(const nlohmann::json& value, const std::string& at,
                                             std::string_view type) const {
  if ((type == "object" && !value.is_object()) || (type == "array" && !value.is_array()))
    return std::unexpected(mismatch(at, type == "object" ? "an object" : "a list"));
  return value;
}

Expected<void> ContractReader::one_of(const std::string& value, const std::string& at,
                                      std::initializer_list<std::string_view> allowed) const {
  std::string text;
  for (const auto candidate : allowed) {
    if (candidate == value) return {};
    text += (text.empty() ? "" : " or ") + std::string(candidate);
  }
  return std::unexpected(mismatch(at, text + ", not '" + value + "'"));
}

std::string ContractReader::items_text(std::size_t min_items, std::size_t max_items) {
  if (min_items == max_items) return "a list of " + std::to_string(min_items);
  if (min_items > 0) return "a list of at least " + std::to_string(min_items);
  return "a list";
}

}  // namespace onnxproof
