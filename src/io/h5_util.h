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

// Context for error messages: which file, which object.
struct Where {
  const std::string& file;
  std::string what;
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
H5Id open_attr(hid_t obj, const char* name, const Where& w);
std::string read_attr_str(hid_t obj, const char* name, const Where& w);
int64_t read_attr_i64(hid_t obj, const char* name, const Where& w);
double read_attr_f64(hid_t obj, const char* name, const Where& w);

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
H5Id open_dataset(hid_t loc, const char* name, int rank, std::vector<hsize_t>& dims,
                  const Where& w);
void read_dataset(hid_t dset, hid_t mem_type, void* data, size_t count, const char* name,
                  const Where& w);
void expect_dims(const std::vector<hsize_t>& got, const std::vector<hsize_t>& want,
                 const char* name, const Where& w);
std::vector<std::string> group_members(hid_t group, const Where& w);

}  // namespace fob::h5io
