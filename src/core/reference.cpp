#include "fob/reference.h"

#include "fob/workload.h"

#include <functional>

namespace fob {
namespace {

uint64_t mix(uint64_t x) {
  // splitmix64: cheap, well spread, and the same on every rank and machine.
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t tensor_key(const std::string& tensor) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : tensor) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

// A dense row-major matrix.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Matrix(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& at(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
};

Matrix global_slice(uint64_t seed, const std::string& tensor, int64_t row0, int64_t rows,
                    int64_t col0, int64_t cols) {
  Matrix out(rows, cols);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) out.at(i, j) = input_value(seed, tensor, row0 + i, col0 + j);
  }
  return out;
}

Matrix multiply(const Matrix& a, const Matrix& b) {
  Matrix c(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i) {
    double* crow = &c.v[static_cast<size_t>(i * c.cols)];
    for (int64_t k = 0; k < a.cols; ++k) {
      const double aik = a.v[static_cast<size_t>(i * a.cols + k)];
      if (aik == 0) continue;
      const double* brow = &b.v[static_cast<size_t>(k * b.cols)];
      for (int64_t j = 0; j < b.cols; ++j) crow[j] += aik * brow[j];
    }
  }
  return c;
}

}  // namespace

double input_value(uint64_t seed, const std::string& tensor, int64_t row, int64_t col) {
  if (tensor == "zeros") return 0.0;
  uint64_t h = mix(seed ^ tensor_key(tensor));
  h = mix(h ^ static_cast<uint64_t>(row));
  h = mix(h ^ (static_cast<uint64_t>(col) << 1));
  return static_cast<double>(static_cast<int>(h % 3) - 1);
}

void fill_input(const InputRegion& region, int64_t cols, uint64_t seed, double* out) {
  for (int64_t i = 0; i < region.rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      out[i * cols + j] =
          input_value(seed, region.tensor, region.global_row + i, region.global_col + j);
    }
  }
}

std::vector<double> expected_output(const Plan& plan, const OutputCheck& check, uint64_t seed) {
  const Geometry g = geometry(plan.workload, plan.shape);
  const int64_t m = g.m;
  const int64_t d = g.d;
  const int64_t f = g.f;
  const int64_t n = plan.world;
  const int64_t r = plan.rank;
  const int64_t block = m / n;
  const int64_t f_local = f / n;

  // H restricted to rows [row0, row0+rows) and F columns [col0, col0+cols).
  auto h_slice = [&](int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
    if (!g.h_is_y) return global_slice(seed, g.h, row0, rows, col0, cols);
    return multiply(global_slice(seed, g.x, row0, rows, 0, d),
                    global_slice(seed, g.w1, 0, d, col0, cols));
  };

  switch (check.kind) {
    case CheckKind::gathered:
      return global_slice(seed, g.x, 0, m, 0, d).v;
    case CheckKind::ag_out:
      return multiply(global_slice(seed, g.x, 0, m, 0, d),
                      global_slice(seed, g.w1, 0, d, r * f_local, f_local))
          .v;
    case CheckKind::rs_out:
      // The sum over ranks of H_j * W2_j is H * W2 over the full FFN width.
      return multiply(h_slice(r * block, block, 0, f), global_slice(seed, g.w2, 0, f, 0, d)).v;
    case CheckKind::local_product:
      return multiply(h_slice(0, m, r * f_local, f_local),
                      global_slice(seed, g.w2, r * f_local, f_local, 0, d))
          .v;
    case CheckKind::gathered_forward:
      return global_slice(seed, "X", 0, m, 0, d).v;
    case CheckKind::grad_w2:
      return multiply(global_slice(seed, "YT", r * f_local, f_local, 0, m),
                      global_slice(seed, g.x, 0, m, 0, d))
          .v;
    case CheckKind::grad_w1: {
      // X^T [d, m] times dY_r = dZ * W2T[:, cols r] [m, f/N].
      const Matrix x = global_slice(seed, "X", 0, m, 0, d);
      Matrix xt(d, m);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < d; ++j) xt.at(j, i) = x.v[static_cast<size_t>(i * d + j)];
      }
      return multiply(xt, h_slice(0, m, r * f_local, f_local)).v;
    }
    case CheckKind::ar_out:
      return multiply(h_slice(0, m, 0, f), global_slice(seed, g.w2, 0, f, 0, d)).v;
    case CheckKind::reduced_input:
    case CheckKind::allreduced_input: {
      // Rank r's block, or every row for the all-reduce.
      const bool all = check.kind == CheckKind::allreduced_input;
      const int64_t row0 = all ? 0 : r * block;
      const int64_t rows = all ? m : block;
      Matrix sum(rows, d);
      for (int64_t j = 0; j < n; ++j) {
        Matrix part = global_slice(seed, "P", row0, rows, j * d, d);
        for (size_t e = 0; e < sum.v.size(); ++e) sum.v[e] += part.v[e];
      }
      return sum.v;
    }
  }
  return {};
}

}  // namespace fob
