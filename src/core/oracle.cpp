#include "fob/oracle.h"

#include "fob/inputs.h"
#include "fob/workload.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace fob {
namespace {

// A dense row-major matrix.
struct Matrix {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Matrix(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& at(int64_t i, int64_t j) { return v[static_cast<size_t>(i * cols + j)]; }
};

// Where input values come from: the seed, and the period with which they repeat (0: none).
struct Source {
  uint64_t seed = 1;
  int64_t period = 0;
};

Matrix global_slice(const Source& src, const std::string& tensor, int64_t row0, int64_t rows,
                    int64_t col0, int64_t cols, int64_t select_from = 0) {
  Matrix out(rows, cols);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      out.at(i, j) = input_value(src.seed, tensor, row0 + i, col0 + j, select_from, src.period);
    }
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

// Rows [row0, row0 + rows) of rank j's attention output O_j [m, d/n]: its heads' Q, K and V
// are columns of X * WQKV_j, and every sequence attends over itself, in double with the
// textbook softmax. WQKV is a selection matrix, so each column of QKV is a signed column of X;
// only the sequences the rows touch are computed.
// With `qkv_input` set, Q, K and V are that integer input tensor's columns instead (ulysses'
// compute_only, whose all-to-all does not run).
Matrix attention_output(const Source& src, const Geometry& g, int64_t n, int64_t j, int64_t row0,
                        int64_t rows, const char* qkv_input = nullptr) {
  const int64_t width = g.d / n;
  const int64_t s = g.seq, dh = g.head_dim;
  const int64_t first_seq = row0 / s * s;
  const int64_t end_seq = (row0 + rows + s - 1) / s * s;
  Matrix qkv(end_seq - first_seq, 3 * width);
  for (int64_t c = 0; c < 3 * width; ++c) {
    const int64_t col = j * 3 * width + c;
    if (qkv_input) {
      for (int64_t t = first_seq; t < end_seq; ++t) {
        qkv.at(t - first_seq, c) = input_value(src.seed, qkv_input, t, col, 0, src.period);
      }
      continue;
    }
    const auto [pick, sign] =
        selection_entry(src.seed, g.w1, src.period > 0 ? col % src.period : col, g.d);
    for (int64_t t = first_seq; t < end_seq; ++t) {
      qkv.at(t - first_seq, c) = sign * input_value(src.seed, g.x, t, pick, 0, src.period);
    }
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  auto at = [&](int64_t row, int64_t col) {
    return qkv.v[static_cast<size_t>((row - first_seq) * qkv.cols + col)];
  };
  Matrix o(rows, width);
  std::vector<double> p(static_cast<size_t>(s));
  for (int64_t t = row0; t < row0 + rows; ++t) {
    const int64_t seq0 = t / s * s;
    for (int64_t h = 0; h < width / dh; ++h) {
      double max = -INFINITY;
      for (int64_t u = 0; u < s; ++u) {
        double dot = 0;
        for (int64_t c = 0; c < dh; ++c) {
          dot += at(t, h * dh + c) * at(seq0 + u, width + h * dh + c);
        }
        p[static_cast<size_t>(u)] = dot * scale;
        max = std::max(max, dot * scale);
      }
      double sum = 0;
      for (double& x : p) sum += (x = std::exp(x - max));
      for (int64_t c = 0; c < dh; ++c) {
        double acc = 0;
        for (int64_t u = 0; u < s; ++u) {
          acc += p[static_cast<size_t>(u)] * at(seq0 + u, 2 * width + h * dh + c);
        }
        o.at(t - row0, h * dh + c) = acc / sum;
      }
    }
  }
  return o;
}

// What a check's expected output is computed from: one rank's view of the layer.
class Oracle {
 public:
  Oracle(const Plan& plan, uint64_t seed)
      : g(geometry(plan.workload, plan.shape)),
        src{seed, plan.input_period},
        m(g.m),
        d(g.d),
        f(g.f),
        n(plan.world),
        r(plan.rank),
        block(m / n),
        f_local(f / n),
        qkv_width(g.ag_f / n),
        tokens(g.seq > 0 ? g.seq / n : 0) {}

  // A check's expected output: Ulysses' checks (the token-split layout and its all-to-alls)
  // here, the tensor-parallel layers' in layer().
  std::vector<double> expected(CheckKind kind) const {
    switch (kind) {
      case CheckKind::ulysses_out: {
        const Matrix wo = global_slice(src, g.w2, 0, d, 0, d);
        return local_rows(
            [&](int64_t row0, int64_t rows) { return multiply(h_slice(row0, rows, 0, f), wo); });
      }
      case CheckKind::input_out: {
        const Matrix wo = global_slice(src, g.w2, 0, d, 0, d);
        return local_rows([&](int64_t row0, int64_t rows) {
          return multiply(global_slice(src, "OA", row0, rows, 0, d), wo);
        });
      }
      case CheckKind::qkv_projected:
        return peer_major([&](int64_t j, int64_t row0, int64_t rows) {
          return multiply(global_slice(src, g.x, row0, rows, 0, d),
                          global_slice(src, g.w1, 0, d, j * qkv_width, qkv_width, d));
        });
      case CheckKind::input_attn_out:
        return attention_output(src, g, n, r, 0, m, "QKV").v;
      case CheckKind::heads_scattered:
        return global_slice(src, "QKV", 0, m, r * qkv_width, qkv_width).v;
      case CheckKind::tokens_gathered:
        return peer_major([&](int64_t j, int64_t row0, int64_t rows) {
          return global_slice(src, "OA", row0, rows, j * f_local, f_local);
        });
      default:
        return layer(kind);
    }
  }

  // The tensor-parallel layers' checks (all-gather and reduce-scatter halves, their backward
  // and all-reduce forms, attention).
  std::vector<double> layer(CheckKind kind) const {
    switch (kind) {
      case CheckKind::gathered:
        return global_slice(src, g.x, 0, m, 0, d).v;
      case CheckKind::ag_out: {
        const int64_t ag_f_local = g.ag_f / n;
        return multiply(global_slice(src, g.x, 0, m, 0, d),
                        global_slice(src, g.w1, 0, d, r * ag_f_local, ag_f_local, g.w1_select))
            .v;
      }
      case CheckKind::attn_out:
        return attention_output(src, g, n, r, 0, m).v;
      case CheckKind::rs_out:
        // The sum over ranks of H_j * W2_j is H * W2 over the full FFN width.
        return multiply(h_slice(r * block, block, 0, f), global_slice(src, g.w2, 0, f, 0, d)).v;
      case CheckKind::local_product:
        return multiply(h_slice(0, m, r * f_local, f_local),
                        global_slice(src, g.w2, r * f_local, f_local, 0, d))
            .v;
      case CheckKind::gathered_forward:
        return global_slice(src, "X", 0, m, 0, d).v;
      case CheckKind::grad_w2:
        return multiply(global_slice(src, "YT", r * f_local, f_local, 0, m),
                        global_slice(src, g.x, 0, m, 0, d))
            .v;
      case CheckKind::grad_w1:
        return grad_w1();
      case CheckKind::ar_out:
        return multiply(h_slice(0, m, 0, f), global_slice(src, g.w2, 0, f, 0, d)).v;
      case CheckKind::reduced_input:
      case CheckKind::allreduced_input:
        return reduced_input(kind == CheckKind::allreduced_input);
      default:
        return {};
    }
  }

 private:
  // H restricted to rows [row0, row0+rows) and F columns [col0, col0+cols).
  Matrix h_slice(int64_t row0, int64_t rows, int64_t col0, int64_t cols) const {
    if (g.h_source == Geometry::HSource::attention) {
      // Attention's O is computed per rank's heads: assemble the ranks the columns span.
      Matrix out(rows, cols);
      for (int64_t j = col0 / f_local; j * f_local < col0 + cols; ++j) {
        const Matrix o = attention_output(src, g, n, j, row0, rows);
        for (int64_t i = 0; i < rows; ++i) {
          for (int64_t c = std::max(col0, j * f_local);
               c < std::min(col0 + cols, (j + 1) * f_local); ++c) {
            out.at(i, c - col0) = o.v[static_cast<size_t>(i * f_local + c - j * f_local)];
          }
        }
      }
      return out;
    }
    if (g.h_source == Geometry::HSource::input) {
      return global_slice(src, g.h, row0, rows, col0, cols);
    }
    return multiply(global_slice(src, g.x, row0, rows, 0, d),
                    global_slice(src, g.w1, 0, d, col0, cols));
  }

  // Ulysses: the rows of this rank's tokens (S/N of every sequence) of a [m, .] matrix, made by
  // part(row0, rows).
  std::vector<double> local_rows(const std::function<Matrix(int64_t, int64_t)>& part) const {
    std::vector<double> out;
    for (int64_t s = 0; s * g.seq < m; ++s) {
      const Matrix piece = part(s * g.seq + r * tokens, tokens);
      out.insert(out.end(), piece.v.begin(), piece.v.end());
    }
    return out;
  }

  // The same per rank j (block j, peer major), where the rows depend on j.
  std::vector<double> peer_major(
      const std::function<Matrix(int64_t, int64_t, int64_t)>& part) const {
    std::vector<double> out;
    for (int64_t j = 0; j < n; ++j) {
      const std::vector<double> rows =
          local_rows([&](int64_t row0, int64_t count) { return part(j, row0, count); });
      out.insert(out.end(), rows.begin(), rows.end());
    }
    return out;
  }

  // X^T [d, m] times dY_r = dZ * W2T[:, cols r] [m, f/N].
  std::vector<double> grad_w1() const {
    const Matrix x = global_slice(src, "X", 0, m, 0, d);
    Matrix xt(d, m);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < d; ++j) xt.at(j, i) = x.v[static_cast<size_t>(i * d + j)];
    }
    return multiply(xt, h_slice(0, m, r * f_local, f_local)).v;
  }

  // Rank r's block of the sum over ranks of P, or every row for the all-reduce.
  std::vector<double> reduced_input(bool all) const {
    const int64_t row0 = all ? 0 : r * block;
    const int64_t rows = all ? m : block;
    Matrix sum(rows, d);
    for (int64_t j = 0; j < n; ++j) {
      Matrix part = global_slice(src, "P", row0, rows, j * d, d);
      for (size_t e = 0; e < sum.v.size(); ++e) sum.v[e] += part.v[e];
    }
    return sum.v;
  }

  const Geometry g;
  const Source src;
  const int64_t m, d, f, n, r, block, f_local, qkv_width, tokens;
};

}  // namespace

std::vector<double> expected_output(const Plan& plan, const OutputCheck& check, uint64_t seed) {
  if (plan.workload->expected) return plan.workload->expected(plan, check, seed);
  return Oracle(plan, seed).expected(check.kind);
}

}  // namespace fob
