// The host's draw (runtime::draw_token) over one logits row of a Qwen-size vocabulary (151,936),
// one thread, plain timers (not a test): what a sampled token costs the cpu lane, and any lane
// whose requests are drawn on the host (penalties, logprobs).
//
// Usage: draw_bench [--draws N] [--sigma S]
// The row is drawn once from N(0, S^2) with a fixed seed (S = 3 by default: a trained model's
// logits spread over some tens); each draw takes a new key. Prints ms a draw, the median of 5
// rounds of N draws, at temperature 0.8 with top-k off and at 50, and a checksum of the tokens
// (the same on every build of the same draw rule).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/draw.h"

int main(int argc, char** argv) {
  int draws = 200;
  float sigma = 3.f;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--draws") == 0) draws = std::max(1, std::atoi(argv[i + 1]));
    else if (std::strcmp(argv[i], "--sigma") == 0) sigma = static_cast<float>(std::atof(argv[i + 1]));
  }
  std::vector<float> logits(151936);
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.f, sigma);
  for (float& x : logits) x = normal(gen);
  for (const int top_k : {0, 50}) {
    lg::DrawParams p;
    p.inv_temperature = 1.f / 0.8f;
    p.top_k = top_k;
    std::vector<double> rounds;
    uint64_t checksum = 0;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < draws; ++i) {
        p.key = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(r * draws + i + 1);
        checksum = checksum * 31 + static_cast<uint64_t>(lg::runtime::draw_token(logits, p));
      }
      rounds.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / draws);
    }
    std::sort(rounds.begin(), rounds.end());
    std::printf("top_k %2d: %.3f ms a draw (median of 5 rounds of %d; checksum %016llx)\n", top_k, rounds[2], draws,
                static_cast<unsigned long long>(checksum));
  }
}
