// A results file's contents as plain bytes: what the journal (NAME.h5.partial) stores case by
// case, and what a sandboxed HDF5 reader hands back to its parent. Encoding is fixed-width
// little-endian, field by field (no struct images, so no padding bytes and no layout
// assumptions). Decoding treats the bytes as hostile: every count is checked against the bytes
// left before anything is allocated, every enum against its range, and every case against the
// invariants the rest of fobench assumes (CaseResult::arrays_match and friends); a violation is
// InputError naming the source and the field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fob/results.h"
#include "h5_util.h"

namespace fob::codec {

class Encoder {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s);
  template <typename T>
  void array(const std::vector<T>& v) {
    u64(v.size());
    if (!v.empty()) raw(v.data(), v.size() * sizeof(T));
  }
  std::string& bytes() { return out_; }

 private:
  void raw(const void* p, size_t n);
  std::string out_;
};

class Decoder {
 public:
  // `where` names the source in messages ("'x.h5.partial', record 3").
  Decoder(std::string_view bytes, std::string where) : in_(bytes), where_(std::move(where)) {}
  uint8_t u8() { return value<uint8_t>(); }
  int32_t i32() { return value<int32_t>(); }
  uint32_t u32() { return value<uint32_t>(); }
  int64_t i64() { return value<int64_t>(); }
  uint64_t u64() { return value<uint64_t>(); }
  double f64() { return value<double>(); }
  std::string str();
  // A string field, within the bytes `kind` allows and cleaned as the HDF5 reader cleans its
  // strings (h5io::clean_text): controls and invalid UTF-8 become U+FFFD.
  std::string text(h5io::Text kind);
  // A count of `elem` bytes each, refused when the rest of the input cannot hold them.
  size_t count(size_t elem, const char* what);
  template <typename T>
  std::vector<T> array(const char* what) {
    std::vector<T> v(count(sizeof(T), what));
    if (!v.empty()) take(v.data(), v.size() * sizeof(T));
    return v;
  }
  size_t left() const { return in_.size() - at_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  template <typename T>
  T value() {
    T v{};
    take(&v, sizeof v);
    return v;
  }
  void take(void* p, size_t n);
  std::string_view in_;
  size_t at_ = 0;
  std::string where_;
};

// A list of one-line strings (a case's timers).
void put_lines(Encoder& e, const std::vector<std::string>& lines);
std::vector<std::string> get_lines(Decoder& d, const char* what);
void put_run(Encoder& e, const RunInfo& run);
void put_system(Encoder& e, const SystemInfo& sys);
void put_case(Encoder& e, const CaseResult& c);
RunInfo get_run(Decoder& d);
SystemInfo get_system(Decoder& d);
// Checked with check_case before it is returned. `with_moe_load` false: the bytes are of a
// journal of format 6, whose cases carry no MoE load.
CaseResult get_case(Decoder& d, bool with_moe_load = true);

// InputError (through `d`) unless the case holds together: a sane id, world, iters and
// max_tasks, arrays of the sizes they say, rounds that sum to iters, timers that match, tasks
// whose stream and kind are ones this version knows, and an MoE load that fits its key.
void check_case(const CaseResult& c, const Decoder& d);

// A whole file's contents (RunInfo, SystemInfo, every case) as one message.
std::string encode_file(const ResultFile& file);
ResultFile decode_file(std::string_view bytes, const std::string& where);

}  // namespace fob::codec
