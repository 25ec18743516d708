// Multibody models described in JSON (config/models/*.json); the format is documented in
// docs/model-format.md. Every error is a ConfigError naming the file and the JSON pointer.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "mbobserver/mb/model.hpp"

namespace mbo::mb {

// Reads and builds a model. `overrides` patches the document first: "gravity", a
// "<body>.<field>" shorthand (e.g. "link2.mass") or a JSON pointer ("/bodies/link2/mass");
// each must name a value that exists. `overrides_where` names them in messages.
Model load_model(const std::filesystem::path& file, const nlohmann::json& overrides = nullptr,
                 const std::string& overrides_where = "overrides");

// Builds from a document already in memory (`name` is used in messages).
Model model_from_json(const nlohmann::json& doc, const std::string& name);

// Checks that the independent coordinates determine the mechanism at the model's initial
// values (the position problem converges and Phi_q over the dependent coordinates has full
// column rank); throws std::invalid_argument with the reason.
void check_kinematics(const Model& m);

}  // namespace mbo::mb
