#pragma once
// The writers generated from schemas/*.schema.json (scripts/contract-codegen.py) turn each field
// into JSON with contract_value(): these overloads cover the values that are not generated structs.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace onnxproof::contract {

inline nlohmann::json contract_value(const std::string& value) { return value; }
inline nlohmann::json contract_value(int64_t value) { return value; }
inline nlohmann::json contract_value(double value) { return value; }
inline nlohmann::json contract_value(bool value) { return value; }
inline nlohmann::json contract_value(const nlohmann::json& value) { return value; }

template <class T>
nlohmann::json contract_value(const std::vector<T>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& value : values) out.push_back(contract_value(value));
  return out;
}

template <class T>
nlohmann::json contract_value(const std::map<std::string, T>& values) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : values) out[name] = contract_value(value);
  return out;
}

/// type: [T, "null"].
template <class T>
nlohmann::json contract_value(const std::optional<T>& value) {
  return value ? contract_value(*value) : nlohmann::json();
}

}  // namespace onnxproof::contract
