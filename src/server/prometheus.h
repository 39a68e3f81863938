// A small writer for the Prometheus text exposition format (version 0.0.4, what `GET /metrics`
// answers and every Prometheus scraper reads): per metric family a `# HELP` and a `# TYPE` line,
// then its samples, `name{label="value"} number`. Histograms are cumulative: one `_bucket` sample
// per upper bound `le` (the last `+Inf`), then `_sum` and `_count`. Format reference:
// https://prometheus.io/docs/instrumenting/exposition_formats/
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lg::server::prometheus {

/// Label name/value pairs of one sample, written in this order.
using Labels = std::vector<std::pair<std::string, std::string>>;

/// Counts of observations at or below fixed upper bounds (seconds, tokens, ...), with their sum.
/// Not thread-safe: its owner locks.
class Histogram {
 public:
  /// `upper_bounds` ascending and finite; +Inf is implicit. Throws std::invalid_argument otherwise.
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);

  const std::vector<double>& upper_bounds() const { return bounds_; }
  /// Observations per bucket (not cumulative), the last one above every bound.
  const std::vector<uint64_t>& bucket_counts() const { return counts_; }
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// Builds one exposition text. Call family() once per metric, then its samples.
class Writer {
 public:
  /// `# HELP name help` and `# TYPE name type` (type: counter, gauge, histogram).
  void family(const std::string& name, const std::string& help, const std::string& type);
  /// `name{labels} value`.
  void sample(const std::string& name, double value, const Labels& labels = {});
  /// A whole histogram family: HELP, TYPE, the cumulative `_bucket`s, `_sum`, `_count`.
  void histogram(const std::string& name, const std::string& help, const Histogram& h);

  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

/// A sample value as Prometheus writes it: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
std::string format_value(double v);
/// A label value with `\`, `"` and newlines escaped.
std::string escape_label_value(const std::string& v);
/// HELP text with `\` and newlines escaped.
std::string escape_help(const std::string& v);

}  // namespace lg::server::prometheus
