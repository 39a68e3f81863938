// The Prometheus text writer (prometheus.h) and lg serve's metric set (serve_metrics.h): exact
// text for small cases, cumulative buckets with Prometheus' "less than or equal", escaping, and a
// check of the whole /metrics text against the format's rules (every sample after its family's
// HELP and TYPE, histogram buckets ascending and cumulative up to +Inf, _count = the +Inf bucket).
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "server/prometheus.h"
#include "server/serve_metrics.h"

namespace {

using namespace lg::server;

TEST(Prometheus, WritesFamiliesAndSamples) {
  prometheus::Writer w;
  w.family("lg_x_total", "Things.\nCounted \\ once.", "counter");
  w.sample("lg_x_total", 3, {{"reason", "a\"b\\c\nd"}, {"k", "v"}});
  w.sample("lg_x_total", 0.25);
  EXPECT_EQ(w.text(),
            "# HELP lg_x_total Things.\\nCounted \\\\ once.\n"
            "# TYPE lg_x_total counter\n"
            "lg_x_total{reason=\"a\\\"b\\\\c\\nd\",k=\"v\"} 3\n"
            "lg_x_total 0.25\n");
}

TEST(Prometheus, HistogramBucketsAreCumulativeAndInclusive) {
  prometheus::Histogram h({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 1.0, 20.0}) h.observe(v);
  prometheus::Writer w;
  w.histogram("t_seconds", "Times.", h);
  EXPECT_EQ(w.text(),
            "# HELP t_seconds Times.\n"
            "# TYPE t_seconds histogram\n"
            "t_seconds_bucket{le=\"0.1\"} 2\n"
            "t_seconds_bucket{le=\"1\"} 4\n"
            "t_seconds_bucket{le=\"10\"} 4\n"
            "t_seconds_bucket{le=\"+Inf\"} 5\n"
            "t_seconds_sum 21.65\n"
            "t_seconds_count 5\n");
  EXPECT_THROW(prometheus::Histogram({1, 1}), std::invalid_argument);
  EXPECT_THROW(prometheus::Histogram({2, 1}), std::invalid_argument);
}

TEST(Prometheus, ValuesAsPrometheusWritesThem) {
  EXPECT_EQ(prometheus::format_value(0), "0");
  EXPECT_EQ(prometheus::format_value(-7), "-7");
  EXPECT_EQ(prometheus::format_value(0.001), "0.001");
  EXPECT_EQ(prometheus::format_value(1.0 / 0.0), "+Inf");
  EXPECT_EQ(prometheus::format_value(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(prometheus::format_value(0.0 / 0.0), "NaN");
  EXPECT_EQ(std::stod(prometheus::format_value(1e20)), 1e20);
}

// The rules a scraper relies on, checked over a whole exposition text.
void expect_valid_exposition(const std::string& text) {
  std::map<std::string, std::string> type_of;  // family -> type
  std::string family;
  std::istringstream in(text);
  double last_bucket = -1, last_le = -1e300;
  for (std::string line; std::getline(in, line);) {
    SCOPED_TRACE(line);
    ASSERT_FALSE(line.empty());
    if (line.rfind("# HELP ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(type_of.count(family), 0u) << "family declared twice";
      last_bucket = -1;
      last_le = -1e300;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      EXPECT_EQ(name, family);
      EXPECT_TRUE(type == "counter" || type == "gauge" || type == "histogram") << type;
      type_of[name] = type;
      continue;
    }
    const std::string name = line.substr(0, line.find_first_of("{ "));
    ASSERT_TRUE(type_of.count(family)) << "a sample before its family's TYPE";
    const std::string& type = type_of[family];
    if (type == "histogram") {
      EXPECT_TRUE(name == family + "_bucket" || name == family + "_sum" || name == family + "_count") << name;
    } else {
      EXPECT_EQ(name, family);
      if (type == "counter") {
        EXPECT_EQ(name.substr(name.size() - 6), "_total");
      }
    }
    const double value = std::stod(line.substr(line.rfind(' ') + 1));
    if (name == family + "_bucket") {
      const size_t le_at = line.find("le=\"") + 4;
      const std::string le = line.substr(le_at, line.find('"', le_at) - le_at);
      const double bound = le == "+Inf" ? 1e300 : std::stod(le);
      EXPECT_GT(bound, last_le) << "buckets out of order";
      EXPECT_GE(value, last_bucket) << "buckets not cumulative";
      last_le = bound;
      last_bucket = value;
    }
    if (name == family + "_count") {
      EXPECT_EQ(value, last_bucket) << "_count differs from the +Inf bucket";
    }
  }
}

TEST(ServeMetrics, RendersEveryMetricInTheTextFormat) {
  ServeMetrics m;
  m.first_token(12, 0.03);
  m.next_token(0.004);
  m.next_token(0.006);
  m.finished({"cmpl-1", 12, 3, "length", 0.03, 0.05});
  // Gone before its first token: its prompt is no prefilled prompt (vLLM counts prompt tokens at the
  // first token too), though it is a finished request.
  m.finished({"cmpl-2", 7, 0, "abort", -1, 0.2});
  m.rejected("queue_full");
  EngineStats s;
  s.running = 2;
  s.waiting = 5;
  s.kv_blocks_used = 3;
  s.kv_blocks_free = 61;
  s.kv_block_size = 16;
  s.preemptions = 4;
  s.prefix_cache = true;
  s.prefix_cache_queries = 200;
  s.prefix_cache_hits = 150;
  const std::string text = m.render(s);
  expect_valid_exposition(text);
  for (const char* line : {"lg_num_requests_running 2\n", "lg_num_requests_waiting 5\n", "lg_kv_blocks_used 3\n",
                           "lg_kv_blocks_free 61\n", "lg_num_preemptions_total 4\n", "lg_prompt_tokens_total 12\n",
                           "lg_generation_tokens_total 3\n", "lg_requests_finished_total{finished_reason=\"length\"} 1\n",
                           "lg_requests_finished_total{finished_reason=\"abort\"} 1\n",
                           "lg_requests_finished_total{finished_reason=\"stop\"} 0\n",
                           "lg_requests_rejected_total{reason=\"queue_full\"} 1\n",
                           "lg_time_to_first_token_seconds_count 1\n", "lg_inter_token_latency_seconds_count 2\n",
                           "lg_inter_token_latency_seconds_bucket{le=\"0.005\"} 1\n",
                           "lg_e2e_request_latency_seconds_count 2\n", "lg_prefix_cache_enabled 1\n",
                           "lg_prefix_cache_queries_total 200\n", "lg_prefix_cache_hits_total 150\n",
                           "lg_prefix_cache_hit_ratio 0.75\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "in:\n" << text;
}

TEST(ServeMetrics, RequestLogLine) {
  EXPECT_EQ(request_log_line({"cmpl-9", 12, 48, "stop", 0.0312, 0.41}),
            "lg: request cmpl-9 prompt_tokens=12 completion_tokens=48 finish_reason=stop ttft_s=0.031 total_s=0.410");
  EXPECT_EQ(request_log_line({"", 3, 0, "abort", -1, 1.5}),
            "lg: request - prompt_tokens=3 completion_tokens=0 finish_reason=abort ttft_s=- total_s=1.500");
}

}  // namespace
