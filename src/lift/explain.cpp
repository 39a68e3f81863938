#include "lift/explain.h"

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace lg::lift {

namespace {
std::string node_text(const ir::Graph& g, ir::ValueId v) {
  const ir::Node& n = g.at(v);
  return (n.name.empty() ? "%" + std::to_string(v) : n.name) + "=" + ir::op_name(n.op);
}

std::string signature(const StagedProgram& p, const Launch& l, const std::vector<bool>& constant) {
  std::string sig;
  for (int32_t s : l.stages) {
    sig += stage_kind_name(p.stages[static_cast<size_t>(s)].kind);
    // The ops too: two GEMMs of one statement (fc1, fc2) are different launches of a layer.
    for (ir::ValueId v : p.stages[static_cast<size_t>(s)].nodes) sig += std::string(" ") + ir::op_name(p.graph.at(v).op);
    for (const auto& line : stage_lines(p, p.stages[static_cast<size_t>(s)], &constant)) sig += " " + line;
    sig += ";";
  }
  return sig;
}
}  // namespace

std::string explain(const StagedProgram& p, bool with_source) {
  std::vector<std::vector<std::string>> text(p.graph.files.size());
  if (with_source)
    for (size_t f = 0; f < p.graph.files.size(); ++f) {
      std::ifstream in(p.graph.files[f]);
      for (std::string line; std::getline(in, line);) text[f].push_back(line);
    }
  std::ostringstream os;
  const std::vector<bool> constant = constant_nodes(p.graph);
  std::vector<uint32_t> reached(p.graph.nodes.size(), 0);  // per node: 1 + the stage that last listed it
  for (size_t li = 0; li < p.launches.size(); ++li) {
    const Launch& l = p.launches[li];
    os << "launch " << li << (l.stages.size() > 1 ? " (stages run together)" : "") << "\n";
    for (int32_t s : l.stages) {
      const Stage& st = p.stages[static_cast<size_t>(s)];
      os << "  stage " << s << " " << stage_kind_name(st.kind) << "\n    computes:";
      for (ir::ValueId v : st.nodes) os << " " << node_text(p.graph, v);
      // Elementwise nodes recomputed inside the stage (dissolved maps), views omitted.
      // Depth first, operands in order (an explicit stack: inline chains are as long as the program).
      const uint32_t walk = static_cast<uint32_t>(s) + 1;
      std::vector<std::string> inl;
      std::vector<std::pair<ir::ValueId, size_t>> stack;
      for (ir::ValueId root : st.nodes) {
        stack.push_back({root, 0});
        while (!stack.empty()) {
          auto& [v, next] = stack.back();
          const auto& ops = p.graph.at(v).operands;
          if (next == ops.size()) {
            stack.pop_back();
            continue;
          }
          const ir::ValueId o = ops[next++];
          if (reached[static_cast<size_t>(o)] == walk || !p.is_inline[static_cast<size_t>(o)]) continue;
          reached[static_cast<size_t>(o)] = walk;
          if (ir::is_elementwise(p.graph.at(o).op)) inl.push_back(ir::op_name(p.graph.at(o).op));
          stack.push_back({o, 0});
        }
      }
      if (!inl.empty()) {
        os << "\n    inline:";
        for (const auto& o : inl) os << " " << o;
      }
      os << "\n    stores:";
      for (ir::ValueId v : st.stores) os << " " << node_text(p.graph, v);
      for (ir::ValueId v : st.nodes)
        if (p.graph.at(v).op == ir::Op::StateWrite)
          os << " " << node_text(p.graph, v) << "(in place)";
      os << "\n    lines:";
      const auto listed = stage_lines(p, st, &constant);
      for (const auto& line : listed) os << " " << line;
      if (listed.empty()) os << " - (values several statements share, computed once)";
      os << "\n";
      if (with_source)
        for (auto [file, line] : stage_line_set(p, st, &constant)) {  // the lines listed above, with their text
          if (file < 0 || static_cast<size_t>(file) >= text.size()) continue;
          const auto& lines = text[static_cast<size_t>(file)];
          if (line >= 1 && static_cast<size_t>(line) <= lines.size())
            os << "      " << line << " | " << lines[static_cast<size_t>(line) - 1] << "\n";
        }
    }
  }
  return os.str();
}

int64_t launches_per_layer(const StagedProgram& p, int64_t* layers_out) {
  if (layers_out) *layers_out = 0;
  std::map<std::string, int64_t> count;
  const std::vector<bool> constant = constant_nodes(p.graph);
  for (const Launch& l : p.launches) ++count[signature(p, l, constant)];
  // L: the most common repeat count (a layer's launches all repeat L times; an unfused layer
  // repeats some signatures a multiple of L times).
  std::map<int64_t, int64_t> freq;
  for (auto& [sig, c] : count)
    if (c > 1) ++freq[c];
  if (freq.empty()) return static_cast<int64_t>(p.launches.size());
  int64_t layers = 0, best = 0;
  for (auto& [c, f] : freq)
    if (f > best) best = f, layers = c;
  if (layers_out) *layers_out = layers;
  int64_t in_layers = 0;
  for (auto& [sig, c] : count)
    if (c % layers == 0) in_layers += c;
  return in_layers / layers;
}

}  // namespace lg::lift
