// A validator for the subset of JSON Schema (draft 2020-12) that results/schema.json
// uses: type, enum, const, required, properties, additionalProperties (bool or schema), items,
// minimum, exclusiveMinimum, maximum, minItems, $ref to "#/$defs/...".
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace flashio {

// Every violation as "path: message"; empty when the document conforms.
std::vector<std::string> validate_schema(const nlohmann::json& schema, const nlohmann::json& doc);

}  // namespace flashio
