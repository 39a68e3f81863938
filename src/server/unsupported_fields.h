// OpenAI (and vLLM extension) request fields that lg serve and lg batch do not implement but that
// would change the answer: logprobs, logit_bias, echo, suffix, best_of, response_format, a
// forced tool_choice, ... Ignoring one would answer 200 with something else
// than what was asked for, so a value that asks for the feature is a 400 naming the field; the
// field's default (what the answer already is) is accepted, so clients that send every field
// with its default keep working. Fields that do not change the answer (user, metadata,
// parallel_tool_calls, ...) are not listed and stay ignored.
#pragma once

#include <nlohmann/json.hpp>

namespace lg::server {

/// Throws RequestError naming the field when `body` (a parsed request object) gives one of the
/// unimplemented fields of its endpoint (chat: /v1/chat/completions, else /v1/completions) a value
/// of the wrong type, or a value other than its default. JSON null counts as absent. The table of
/// fields, their types and defaults is in unsupported_fields.cpp (and docs/server.md).
void refuse_unsupported_fields(const nlohmann::json& body, bool chat);

}  // namespace lg::server
