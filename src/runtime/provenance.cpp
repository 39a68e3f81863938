#include "runtime/provenance.h"

#include <nlohmann/json.hpp>

namespace lg {

namespace {
template <class... F> struct Overload : F... { using F::operator()...; };
template <class... F> Overload(F...) -> Overload<F...>;
}  // namespace

std::string to_string(const Provenance& p) {
  return std::visit(Overload{[](const Compiled&) { return std::string("Compiled"); },
                             [](const Reference&) { return std::string("Reference"); },
                             [](const HandWritten& h) {
                               return "HandWritten{model: " + h.model + ", lane: " + h.lane + "}";
                             }},
                    p);
}

std::string to_json(const Provenance& p) {
  nlohmann::json j;
  std::visit(Overload{[&](const Compiled&) { j["kind"] = "Compiled"; },
                      [&](const Reference&) { j["kind"] = "Reference"; },
                      [&](const HandWritten& h) {
                        j["kind"] = "HandWritten";
                        j["model"] = h.model;
                        j["lane"] = h.lane;
                      }},
             p);
  return j.dump(2);
}

}  // namespace lg
