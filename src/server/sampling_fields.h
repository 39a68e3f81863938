// The request fields that shape how the next token is picked beyond temperature and the nucleus
// (vLLM's SamplingParams, OpenAI's API): the penalties and min_p, logit_bias, min_tokens and
// stop_token_ids, parsed and range-checked for both endpoints. Token ids are checked against the
// vocabulary by the engine (Engine::check_sampling_ids), which knows it.
#pragma once

#include <nlohmann/json.hpp>

#include "server/request.h"

namespace lg::server {

/// Reads repetition_penalty (> 0), presence_penalty and frequency_penalty (in [-2, 2]), min_p (in
/// [0, 1]), logit_bias (an object mapping token ids, written as decimal strings, to numbers in
/// [-100, 100]: OpenAI's range), min_tokens (an integer >= 0) and stop_token_ids (an array of
/// integers >= 0) of body `j` into `g`. Absent or null fields are left as they are. Throws
/// RequestError naming the field for a value of the wrong type or range.
void parse_sampling_fields(const nlohmann::json& j, GenerationRequest& g);

}  // namespace lg::server
