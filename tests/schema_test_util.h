// The documented result schema (results/schema.json) as the tests read it.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace flashio {

// The result schema's record definition, as a schema of its own.
inline nlohmann::json record_schema() {
  std::ifstream in(std::string(FLASHIO_SOURCE_DIR) + "/results/schema.json");
  const nlohmann::json full = nlohmann::json::parse(in);
  return {{"$defs", full["$defs"]}, {"$ref", "#/$defs/record"}};
}

}  // namespace flashio
