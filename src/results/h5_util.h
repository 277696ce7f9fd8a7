// The HDF5 C API as the results file's reader and writer use it: owned ids, every return code
// checked and turned into an exception naming the file and the object, and typed attributes.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fob::h5io {

// Owns one hid_t and closes it with the matching H5?close.
class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Id(H5Id&& other) noexcept : id_(std::exchange(other.id_, -1)), closer_(other.closer_) {}
  H5Id& operator=(H5Id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      closer_ = other.closer_;
    }
    return *this;
  }
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  ~H5Id() { reset(); }

  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // NOLINT: these are passed straight to the C API
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

class ReadBudget;

// Context for error messages: which file, which object; and, for reading, what the file's
// datasets may still take in memory (every dataset reader refuses to run without it).
struct Where {
  const std::string& file;
  std::string what;
  ReadBudget* budget = nullptr;
};

// The innermost messages of HDF5's error stack, clearing it; and switching off HDF5's own
// printing of errors, which these checks report instead.
std::string h5_error_text();
void silence_hdf5();
[[noreturn]] void fail(const Where& where, const std::string& op);
hid_t check_id(hid_t id, const Where& where, const std::string& op);
void check(herr_t status, const Where& where, const std::string& op);
H5Id make_type(hid_t id, const Where& w);
H5Id fixed_string_type(size_t len, const Where& w);
void copy_fixed(char* dst, size_t len, const std::string& src);
std::string from_fixed(const char* src, size_t len);
void write_attr_str(hid_t obj, const char* name, const std::string& value, const Where& w);
void write_attr_num(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, const void* value,
                    const Where& w);
void write_attr_i64(hid_t obj, const char* name, int64_t value, const Where& w);
void write_attr_i32(hid_t obj, const char* name, int32_t value, const Where& w);
void write_attr_f64(hid_t obj, const char* name, double value, const Where& w);
bool has_attr(hid_t obj, const char* name);

// Datasets of any rank, and a group's member names.
// max_dims, create_plist: as H5Screate_simple and H5Dcreate2 take them (write_growing_dataset).
void write_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type,
                   const std::vector<hsize_t>& dims, const void* data, const Where& w,
                   const hsize_t* max_dims = nullptr, hid_t create_plist = H5P_DEFAULT);
// A dataset whose first dimension grows (a case's iterations, round by round): chunked, with
// no limit on that dimension. `dims` is its starting size.
void write_growing_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type,
                           const std::vector<hsize_t>& dims, const void* data, const Where& w);
// Appends `rows` rows (each the size of the dataset's other dimensions) at the end of the first.
void append_to_dataset(hid_t loc, const char* name, hid_t mem_type, hsize_t rows, const void* data,
                       const Where& w);

// ---- reading a file that may have been made to harm its reader -----------------------------
//
// A results file may come from anywhere (a colleague, a CI artifact, a crafted upload), so every
// reader below refuses, as InputError naming the file and the object, what the writer never
// writes: before HDF5 follows a link out of the file, reads storage outside it, or allocates
// what the file only declares. The writer's own files always pass.

// What a string read from a file may hold: one line (names, versions, the timer: up to
// kLineBytes), one line with an entry per rank (hostnames, devices: up to kTextBytes), or text
// of several lines (config, environment, command line: up to kTextBytes).
enum class Text { line, list, lines };
inline constexpr size_t kLineBytes = size_t{4} << 10;
inline constexpr size_t kTextBytes = size_t{4} << 20;

// `raw` safe for terminals, markdown, CSV and JSON: every control character (but \n and \t in
// Text::lines) and every byte that is not part of valid UTF-8 becomes U+FFFD.
std::string clean_text(const std::string& raw, Text kind);
// Lines as one attribute's text (newline-separated), and back.
std::string join_lines(const std::vector<std::string>& lines);
std::vector<std::string> split_lines(const std::string& text);

// The bytes a file's datasets may take in memory, all of them together: a small multiple of the
// file's own size, since the writer stores every element it declares. Charged before each
// allocation, so that datasets sharing (or lying about) their storage cannot add up to more.
class ReadBudget {
 public:
  explicit ReadBudget(uint64_t file_bytes);
  void charge(uint64_t bytes, const char* name, const Where& w);

 private:
  uint64_t file_bytes_, left_;
};

// Whether `name` is a link in `loc`, and opening it as a group: only a hard link (an object in
// this file) is followed; a soft, external or user-defined one is refused.
bool has_link(hid_t loc, const char* name, const Where& w);
void require_hard_link(hid_t loc, const char* name, const Where& w);
H5Id open_group(hid_t loc, const char* name, const Where& w);
// A new group `name` in `loc`, open (the writer's side).
H5Id create_group(hid_t loc, const char* name, const Where& w);

// Attributes of one element (a scalar dataspace, or one of size 1) of the class the schema
// gives: a string of at most the bytes `kind` allows, cleaned (clean_text); an integer within
// [low, high]; a floating-point number.
std::string read_attr_str(hid_t obj, const char* name, Text kind, const Where& w);
int64_t read_attr_int(hid_t obj, const char* name, int64_t low, int64_t high, const Where& w);
double read_attr_f64(hid_t obj, const char* name, const Where& w);

// A dataset as the writer makes it: a hard link, contiguous, compact or chunked storage inside
// the file (no external files, no virtual layout, no filters), of type class `type_class` and
// rank `rank`, every dimension below 2^31, and storing every byte it declares. `mem_bytes` (the
// size of one element in memory) times its elements is charged to w.budget. Returns it open,
// with its dims.
H5Id open_dataset(hid_t loc, const char* name, int rank, H5T_class_t type_class, size_t mem_bytes,
                  std::vector<hsize_t>& dims, const Where& w);
void read_dataset(hid_t dset, hid_t mem_type, void* data, size_t count, const char* name,
                  const Where& w);
void expect_dims(const std::vector<hsize_t>& got, const std::vector<hsize_t>& want,
                 const char* name, const Where& w);
// A whole dataset of exactly the dims `want` into `out`, as `mem_type` elements (open_dataset's
// checks, then expect_dims').
template <typename T>
void read_array(hid_t loc, const char* name, H5T_class_t type_class, hid_t mem_type,
                const std::vector<hsize_t>& want, std::vector<T>& out, const Where& w) {
  std::vector<hsize_t> dims;
  H5Id dset =
      open_dataset(loc, name, static_cast<int>(want.size()), type_class, sizeof(T), dims, w);
  expect_dims(dims, want, name, w);
  size_t count = 1;
  for (hsize_t d : want) count *= d;
  out.resize(count);
  read_dataset(dset, mem_type, out.data(), out.size(), name, w);
}
// The names of a group's links, as they are (to open them by); clean_text them to show them.
std::vector<std::string> group_members(hid_t group, const Where& w);

}  // namespace fob::h5io
