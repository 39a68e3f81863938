#include "runtime/forward_graph.h"

#include <string>

#include "ir/verify.h"
#include "lang/lower.h"
#include "runtime/bind_params.h"
#include "runtime/model_source.h"
#include "support/error.h"

namespace lg::runtime {

ForwardGraph forward_graph(const model::ModelDir& dir, int64_t max_seq) {
  ForwardGraph fg = forward_graph(dir.config, max_seq);
  check_params(fg.graph, dir.checkpoint);
  return fg;
}

ForwardGraph forward_graph(const model::ModelConfig& config, int64_t max_seq) {
  if (max_seq < 0) throw Error("max sequence length must be >= 0, got " + std::to_string(max_seq));
  if (max_seq > config.max_position_embeddings)
    throw Error("max sequence length " + std::to_string(max_seq) + " exceeds the model's context (max_position_embeddings = " +
                std::to_string(config.max_position_embeddings) + " in " + config.source + ")");
  ForwardGraph fg;
  fg.source = find_model_source(config);
  fg.max_seq = max_seq > 0 ? max_seq : config.max_position_embeddings;
  lang::BindOptions opts;
  opts.max_seq = fg.max_seq;
  fg.graph = lang::lower_file(fg.source, config.raw, opts);
  ir::verify(fg.graph);
  return fg;
}

}  // namespace lg::runtime
