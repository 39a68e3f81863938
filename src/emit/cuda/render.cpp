// render_launch: the dispatcher from a launch's stages to the emitter of each stage's kind (see
// render.h for which file renders what).
#include "emit/cuda/render.h"

#include <algorithm>

#include "emit/cuda/renderer.h"

namespace lg::emit::cuda {

RenderedLaunch render_launch(const lift::StagedProgram& p, const std::vector<int32_t>& stages, AttentionForm attention,
                             const std::optional<std::set<ir::ValueId>>& unsettled) {
  return with_layer_lifting(p, [&](Renderer& r) {
    r.unsettled = unsettled;
    r.attention_wide = attention == AttentionForm::kWide;
    r.attention_one_row = attention == AttentionForm::kOneRow;
    RenderedLaunch out;
    std::ostringstream body;
    for (int32_t s : stages) {
      lift::StageKind k = p.stages[static_cast<size_t>(s)].kind;
      if ((k == lift::StageKind::Gemm || k == lift::StageKind::Attention || k == lift::StageKind::Experts) &&
          stages.size() > 1)
        throw Error("emit: stage " + std::to_string(s) + " (" + lift::stage_kind_name(k) +
                    ") must have a launch of its own");
      if (k == lift::StageKind::Gemm) {
        r.gemm_stage(s, body, out.work_const, out.work_t_power);
        out.per_block = kGemmThreads / 32;  // warps per block
        out.block = kGemmThreads;
        out.gemm = true;
      } else if (k == lift::StageKind::Experts) {
        r.experts_stage(s, body, out.work_const, out.work_t_power);
      } else if (k == lift::StageKind::Attention) {
        out.split = r.attention_stage(s, body, out.work_const, out.work_t_power);
        out.per_block = 1;
        out.block = out.split->threads;
      } else {
        r.element_stage(s, body, out.work_const, out.work_t_power);
      }
    }
    // A split-KV attention block of 8 warps: at most 128 registers a thread, so two blocks share an
    // SM; the one-row form asks for its blocks_per_sm (three: 80 registers).
    const int64_t blocks = !out.split || out.block != 256 ? std::max(1, r.min_blocks_per_sm)
                           : out.split->blocks_per_sm > 0 ? out.split->blocks_per_sm
                                                          : 2;
    const std::string bounds =
        "__launch_bounds__(" + std::to_string(out.block) + (blocks > 1 ? ", " + std::to_string(blocks) + ")" : ")");
    out.source = r.kernel(bounds, out.split ? kSplitKvParams : std::vector<std::string>{}, "", body.str());
    out.args = r.args;
    out.layer = r.layer();
    return out;
  });
}

}  // namespace lg::emit::cuda
