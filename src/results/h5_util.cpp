#include "h5_util.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json_text.h"
#include "fob/types.h"

namespace fob::h5io {

// The innermost messages of HDF5's error stack, e.g. "unable to open file; file signature not
// found", then clears it so the next failure starts from an empty stack.
std::string h5_error_text() {
  std::vector<std::string> descs;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* err, void* data) -> herr_t {
        if (err->desc && *err->desc)
          static_cast<std::vector<std::string>*>(data)->push_back(err->desc);
        return 0;
      },
      &descs);
  H5Eclear2(H5E_DEFAULT);
  if (descs.empty()) return "unknown HDF5 error";
  if (descs.size() == 1 || descs.front() == descs.back()) return descs.front();
  return descs.front() + "; " + descs.back();
}

void silence_hdf5() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

[[noreturn]] void fail(const Where& where, const std::string& op) {
  throw RuntimeFault("HDF5 error in '" + where.file + "' " + op +
                     (where.what.empty() ? "" : " " + where.what) + ": " + h5_error_text());
}

hid_t check_id(hid_t id, const Where& where, const std::string& op) {
  if (id < 0) fail(where, op);
  return id;
}

void check(herr_t status, const Where& where, const std::string& op) {
  if (status < 0) fail(where, op);
}

H5Id make_type(hid_t id, const Where& w) {
  return H5Id(check_id(id, w, "creating a datatype"), H5Tclose);
}

H5Id fixed_string_type(size_t len, const Where& w) {
  H5Id type = make_type(H5Tcopy(H5T_C_S1), w);
  check(H5Tset_size(type, len), w, "sizing a string type");
  check(H5Tset_strpad(type, H5T_STR_NULLTERM), w, "setting string padding");
  return type;
}

void copy_fixed(char* dst, size_t len, const std::string& src) {
  std::memset(dst, 0, len);
  std::memcpy(dst, src.data(), std::min(src.size(), len - 1));
}

std::string from_fixed(const char* src, size_t len) {
  return std::string(src, strnlen(src, len));
}

// ---- attributes -----------------------------------------------------------------------------

namespace {

// Writing an attribute again (a case's iteration count, round by round) replaces it.
void replace_attr(hid_t obj, const char* name, const Where& w) {
  if (H5Aexists(obj, name) > 0) {
    check(H5Adelete(obj, name), w, std::string("replacing attribute '") + name + "'");
  }
}

}  // namespace

void write_attr_str(hid_t obj, const char* name, const std::string& value, const Where& w) {
  // Variable-length UTF-8: h5py reads it as str, and long values (config, env) stay out of the
  // 64 KiB object header.
  H5Id type = make_type(H5Tcopy(H5T_C_S1), w);
  check(H5Tset_size(type, H5T_VARIABLE), w, "sizing a string type");
  check(H5Tset_cset(type, H5T_CSET_UTF8), w, "setting a string charset");
  replace_attr(obj, name, w);
  H5Id space(check_id(H5Screate(H5S_SCALAR), w, "creating a dataspace"), H5Sclose);
  H5Id attr(check_id(H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT), w,
                     std::string("creating attribute '") + name + "'"),
            H5Aclose);
  const char* data = value.c_str();
  check(H5Awrite(attr, type, &data), w, std::string("writing attribute '") + name + "'");
}

void write_attr_num(hid_t obj, const char* name, hid_t file_type, hid_t mem_type, const void* value,
                    const Where& w) {
  replace_attr(obj, name, w);
  H5Id space(check_id(H5Screate(H5S_SCALAR), w, "creating a dataspace"), H5Sclose);
  H5Id attr(check_id(H5Acreate2(obj, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT), w,
                     std::string("creating attribute '") + name + "'"),
            H5Aclose);
  check(H5Awrite(attr, mem_type, value), w, std::string("writing attribute '") + name + "'");
}

void write_attr_i64(hid_t obj, const char* name, int64_t value, const Where& w) {
  write_attr_num(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value, w);
}

void write_attr_i32(hid_t obj, const char* name, int32_t value, const Where& w) {
  write_attr_num(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &value, w);
}

void write_attr_f64(hid_t obj, const char* name, double value, const Where& w) {
  write_attr_num(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, w);
}

bool has_attr(hid_t obj, const char* name) {
  return H5Aexists(obj, name) > 0;
}

void write_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type,
                   const std::vector<hsize_t>& dims, const void* data, const Where& w,
                   const hsize_t* max_dims, hid_t create_plist) {
  H5Id space(check_id(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max_dims), w,
                      "creating a dataspace"),
             H5Sclose);
  H5Id dset(
      check_id(H5Dcreate2(loc, name, file_type, space, H5P_DEFAULT, create_plist, H5P_DEFAULT), w,
               std::string("creating dataset '") + name + "'"),
      H5Dclose);
  hsize_t count = 1;
  for (hsize_t d : dims) count *= d;
  if (count == 0) return;  // an empty dataset (e.g. deps [0, 3]) has nothing to write
  check(H5Dwrite(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), w,
        std::string("writing dataset '") + name + "'");
}

void write_growing_dataset(hid_t loc, const char* name, hid_t file_type, hid_t mem_type,
                           const std::vector<hsize_t>& dims, const void* data, const Where& w) {
  std::vector<hsize_t> max_dims = dims;
  max_dims[0] = H5S_UNLIMITED;
  // Chunks of as many rows as the first write (a round: later rounds are alike), at most
  // 256 KiB: a chunk is stored whole, so a larger one would waste what a short run leaves empty.
  std::vector<hsize_t> chunk = dims;
  hsize_t row_bytes = H5Tget_size(file_type);
  for (size_t i = 1; i < dims.size(); ++i) {
    chunk[i] = std::max<hsize_t>(dims[i], 1);
    row_bytes *= chunk[i];
  }
  chunk[0] = std::clamp<hsize_t>(dims[0], 1, std::max<hsize_t>((256 << 10) / row_bytes, 1));
  H5Id dcpl(check_id(H5Pcreate(H5P_DATASET_CREATE), w, "creating a property list"), H5Pclose);
  check(H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data()), w, "choosing chunks");
  write_dataset(loc, name, file_type, mem_type, dims, data, w, max_dims.data(), dcpl);
}

void append_to_dataset(hid_t loc, const char* name, hid_t mem_type, hsize_t rows, const void* data,
                       const Where& w) {
  const std::string what = std::string("dataset '") + name + "'";
  H5Id dset(check_id(H5Dopen2(loc, name, H5P_DEFAULT), w, "opening " + what), H5Dclose);
  std::vector<hsize_t> dims;
  {
    H5Id space(check_id(H5Dget_space(dset), w, "reading a dataspace"), H5Sclose);
    dims.resize(static_cast<size_t>(H5Sget_simple_extent_ndims(space)));
    check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), w, "reading the dims of " + what);
  }
  if (dims.empty()) fail(w, "appending to the scalar " + what);
  std::vector<hsize_t> start(dims.size(), 0), count = dims;
  start[0] = dims[0];
  count[0] = rows;
  dims[0] += rows;
  check(H5Dset_extent(dset, dims.data()), w, "growing " + what);
  hsize_t total = 1;
  for (hsize_t c : count) total *= c;
  if (total == 0) return;
  H5Id file_space(check_id(H5Dget_space(dset), w, "reading a dataspace"), H5Sclose);
  check(
      H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
      w, "selecting the new rows of " + what);
  H5Id mem_space(check_id(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                          w, "creating a dataspace"),
                 H5Sclose);
  check(H5Dwrite(dset, mem_type, mem_space, file_space, H5P_DEFAULT, data), w,
        "appending to " + what);
}

// ---- reading --------------------------------------------------------------------------------

namespace {

[[noreturn]] void refuse(const Where& w, const std::string& object, const std::string& why) {
  throw InputError("'" + w.file + "': " + object + " of " + w.what + " " + why);
}

std::string attr_name(const char* name) {
  return std::string("attribute '") + name + "'";
}

std::string dataset_name(const char* name) {
  return std::string("dataset '") + name + "'";
}

}  // namespace

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += (out.empty() ? "" : "\n") + line;
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out(1);
  for (char ch : text) {
    if (ch == '\n') {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

std::string clean_text(const std::string& raw, Text kind) {
  return fob::clean_text(raw, kind == Text::lines);
}

namespace {

// Four times the file (the writer's elements take as many bytes in memory as in the file, give
// or take alignment) and 1 MiB for the smallest files.
constexpr uint64_t kBudgetPerFileByte = 4;
constexpr uint64_t kBudgetSlack = uint64_t{1} << 20;

}  // namespace

ReadBudget::ReadBudget(uint64_t file_bytes)
    : file_bytes_(file_bytes), left_(kBudgetPerFileByte * file_bytes + kBudgetSlack) {}

void ReadBudget::charge(uint64_t bytes, const char* name, const Where& w) {
  if (bytes > left_) {
    refuse(w, dataset_name(name),
           "declares " + std::to_string(bytes) + " bytes, beyond the " + std::to_string(left_) +
               " its file of " + std::to_string(file_bytes_) +
               " bytes leaves to read: the file is damaged or crafted");
  }
  left_ -= bytes;
}

bool has_link(hid_t loc, const char* name, const Where& w) {
  const htri_t exists = H5Lexists(loc, name, H5P_DEFAULT);
  if (exists < 0) fail(w, std::string("looking up '") + name + "'");
  return exists > 0;
}

void require_hard_link(hid_t loc, const char* name, const Where& w) {
  H5L_info_t info{};
  check(H5Lget_info(loc, name, &info, H5P_DEFAULT), w,
        std::string("looking up link '") + name + "'");
  if (info.type != H5L_TYPE_HARD) {
    const char* kind = info.type == H5L_TYPE_SOFT       ? "a soft link"
                       : info.type == H5L_TYPE_EXTERNAL ? "an external link"
                                                        : "a user-defined link";
    refuse(w, std::string("'") + name + "'",
           std::string("is ") + kind +
               ": a results file links only its own objects, and this one is not followed");
  }
}

H5Id open_group(hid_t loc, const char* name, const Where& w) {
  require_hard_link(loc, name, w);
  return H5Id(check_id(H5Gopen2(loc, name, H5P_DEFAULT), w, "opening group"), H5Gclose);
}

H5Id create_group(hid_t loc, const char* name, const Where& w) {
  return H5Id(
      check_id(H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), w, "creating group"),
      H5Gclose);
}

namespace {

// Whether a dataspace holds exactly one element: scalar, or simple with every dimension 1
// (each checked, since their product is computed modulo 2^64).
bool single_element(hid_t space) {
  const H5S_class_t kind = H5Sget_simple_extent_type(space);
  if (kind == H5S_SCALAR) return true;
  const int ndims = H5Sget_simple_extent_ndims(space);
  if (kind != H5S_SIMPLE || ndims < 0 || ndims > H5S_MAX_RANK) return false;
  hsize_t dims[H5S_MAX_RANK] = {};
  if (H5Sget_simple_extent_dims(space, dims, nullptr) < 0) return false;
  return std::all_of(dims, dims + ndims, [](hsize_t d) { return d == 1; });
}

// The attribute and its type, refused unless it holds one element of class `want`, at most
// `max_size` bytes.
std::pair<H5Id, H5Id> open_single_attr(hid_t obj, const char* name, H5T_class_t want,
                                       const char* what, size_t max_size, const Where& w) {
  H5Id attr(check_id(H5Aopen(obj, name, H5P_DEFAULT), w, "opening " + attr_name(name)), H5Aclose);
  H5Id type = make_type(H5Aget_type(attr), w);
  if (H5Tget_class(type) != want) refuse(w, attr_name(name), std::string("is not ") + what);
  const size_t size = H5Tget_size(type);
  if (size == 0 || size > max_size) {
    refuse(
        w, attr_name(name),
        "has elements of " + std::to_string(size) + " bytes, not " + what + " the writer stores");
  }
  H5Id space(check_id(H5Aget_space(attr), w, "reading the dataspace of " + attr_name(name)),
             H5Sclose);
  if (!single_element(space)) {
    refuse(w, attr_name(name),
           "holds " + std::to_string(H5Sget_simple_extent_npoints(space)) +
               " values where the schema has one");
  }
  return {std::move(attr), std::move(type)};
}

}  // namespace

// Fixed- and variable-length strings alike, so files touched by h5py (which writes
// variable-length ones) read back too.
std::string read_attr_str(hid_t obj, const char* name, Text kind, const Where& w) {
  const size_t limit = kind == Text::line ? kLineBytes : kTextBytes;
  auto [attr, type] = open_single_attr(obj, name, H5T_STRING, "a string", limit, w);
  const std::string op = "reading " + attr_name(name);
  const htri_t variable = H5Tis_variable_str(type);
  if (variable < 0) fail(w, op);
  std::string value;
  if (variable > 0) {
    // HDF5 allocates the length the heap object declares, which a crafted file may set far
    // past the file's size (HDF5 1.10.8 zeroes it before reading): what bounds it is the
    // reading child's memory limit (read_results.cpp), a refusal (exit 2) when passed.
    H5Id mem = make_type(H5Tcopy(H5T_C_S1), w);
    check(H5Tset_size(mem, H5T_VARIABLE), w, op);
    check(H5Tset_cset(mem, H5Tget_cset(type)), w, op);
    char* data = nullptr;
    check(H5Aread(attr, mem, &data), w, op);
    if (data) value.assign(data, strnlen(data, limit + 1));
    H5free_memory(data);
  } else {
    const size_t len = H5Tget_size(type);
    std::vector<char> buf(len + 1, '\0');
    check(H5Aread(attr, type, buf.data()), w, op);
    value = from_fixed(buf.data(), len);
  }
  if (value.size() > limit) {
    refuse(w, attr_name(name), "holds more than " + std::to_string(limit) + " bytes");
  }
  return clean_text(value, kind);
}

int64_t read_attr_int(hid_t obj, const char* name, int64_t low, int64_t high, const Where& w) {
  auto [attr, type] = open_single_attr(obj, name, H5T_INTEGER, "an integer", 8, w);
  // HDF5 clips an unsigned value beyond int64 to its maximum, which the range then refuses.
  int64_t value = 0;
  check(H5Aread(attr, H5T_NATIVE_INT64, &value), w, "reading " + attr_name(name));
  if (value < low || value > high) {
    refuse(w, attr_name(name),
           "is " + std::to_string(value) + ", outside " + std::to_string(low) + " to " +
               std::to_string(high));
  }
  return value;
}

double read_attr_f64(hid_t obj, const char* name, const Where& w) {
  auto [attr, type] = open_single_attr(obj, name, H5T_FLOAT, "a floating-point number", 16, w);
  double value = 0;
  check(H5Aread(attr, H5T_NATIVE_DOUBLE, &value), w, "reading " + attr_name(name));
  return value;
}

namespace {

// The dimensions of every array in a results file are int32 counts (ranks, iterations, tasks).
constexpr hsize_t kMaxDim = std::numeric_limits<int32_t>::max();

// Refuses storage the writer never makes, from the creation properties alone: asking HDF5 for
// the extent of a virtual dataset would already open its source files.
uint64_t check_storage_kind(hid_t dset, const char* name, size_t elem, const Where& w) {
  H5Id dcpl(
      check_id(H5Dget_create_plist(dset), w, "reading the properties of " + dataset_name(name)),
      H5Pclose);
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout == H5D_VIRTUAL) {
    refuse(w, dataset_name(name), "is a virtual dataset, whose data would come from other files");
  }
  if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) {
    refuse(w, dataset_name(name), "has a storage layout the writer never uses");
  }
  const int external = H5Pget_external_count(dcpl);
  if (external != 0) {
    if (external < 0) fail(w, "reading the external files of " + dataset_name(name));
    refuse(w, dataset_name(name), "keeps its data in external files, outside the results file");
  }
  const int filters = H5Pget_nfilters(dcpl);
  if (filters != 0) {
    if (filters < 0) fail(w, "reading the filters of " + dataset_name(name));
    refuse(w, dataset_name(name),
           "is filtered (compressed or encoded): the writer never filters, and what a filter "
           "expands to is not bounded by what the file stores");
  }
  if (layout != H5D_CHUNKED) return 0;
  hsize_t chunk[H5S_MAX_RANK] = {};
  const int rank = H5Pget_chunk(dcpl, H5S_MAX_RANK, chunk);
  if (rank < 0) fail(w, "reading the chunks of " + dataset_name(name));
  uint64_t bytes = elem;
  for (int i = 0; i < rank; ++i) {
    if (__builtin_mul_overflow(bytes, chunk[i], &bytes)) bytes = UINT64_MAX;
  }
  return bytes;
}

// The dims of a simple dataspace of rank `rank`, each checked, and their product.
uint64_t checked_extent(hid_t dset, const char* name, int rank, std::vector<hsize_t>& dims,
                        const Where& w) {
  H5Id space(check_id(H5Dget_space(dset), w, "reading the dataspace of " + dataset_name(name)),
             H5Sclose);
  if (H5Sget_simple_extent_type(space) != H5S_SIMPLE || H5Sget_simple_extent_ndims(space) != rank) {
    refuse(w, dataset_name(name), "should have " + std::to_string(rank) + " dimensions");
  }
  dims.assign(static_cast<size_t>(rank), 0);
  check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), w,
        "reading the dims of " + dataset_name(name));
  uint64_t count = 1;
  for (hsize_t d : dims) {
    if (d > kMaxDim) {
      refuse(w, dataset_name(name),
             "has a dimension of " + std::to_string(d) + ", beyond the 2^31 - 1 of any count");
    }
    if (__builtin_mul_overflow(count, d, &count)) count = UINT64_MAX;
  }
  return count;
}

}  // namespace

H5Id open_dataset(hid_t loc, const char* name, int rank, H5T_class_t type_class, size_t mem_bytes,
                  std::vector<hsize_t>& dims, const Where& w) {
  if (!w.budget) throw std::logic_error("reading " + dataset_name(name) + " without a budget");
  if (!has_link(loc, name, w)) {
    throw InputError("'" + w.file + "': " + w.what + " has no dataset '" + name + "'");
  }
  require_hard_link(loc, name, w);
  H5Id dset(check_id(H5Dopen2(loc, name, H5P_DEFAULT), w, "opening " + dataset_name(name)),
            H5Dclose);
  H5Id type(check_id(H5Dget_type(dset), w, "reading the type of " + dataset_name(name)), H5Tclose);
  const size_t elem = H5Tget_size(type);
  const uint64_t chunk_bytes = check_storage_kind(dset, name, elem, w);
  if (H5Tget_class(type) != type_class || elem == 0) {
    refuse(w, dataset_name(name), "has a type of another class than the schema gives it");
  }
  const uint64_t count = checked_extent(dset, name, rank, dims, w);
  uint64_t declared = 0, in_memory = 0;
  if (__builtin_mul_overflow(count, elem, &declared)) declared = UINT64_MAX;
  if (__builtin_mul_overflow(count, mem_bytes, &in_memory)) in_memory = UINT64_MAX;
  if (declared > 0) {
    // The writer writes every element it declares, so a file storing less was damaged or made
    // to declare what it does not hold (reading would allocate it all the same).
    const uint64_t stored = H5Dget_storage_size(dset);
    if (declared > stored) {
      refuse(w, dataset_name(name),
             "declares " + std::to_string(declared) + " bytes but the file stores " +
                 std::to_string(stored) + " for it: the file is damaged or crafted");
    }
  }
  // A chunk is read whole into memory where it fits HDF5's 1 MiB chunk cache.
  if (chunk_bytes > std::max<uint64_t>(declared, uint64_t{1} << 20)) {
    refuse(w, dataset_name(name),
           "has chunks of " + std::to_string(chunk_bytes) + " bytes, more than its own " +
               std::to_string(declared));
  }
  w.budget->charge(std::max(declared, in_memory), name, w);
  return dset;
}

void read_dataset(hid_t dset, hid_t mem_type, void* data, size_t count, const char* name,
                  const Where& w) {
  if (count == 0) return;
  check(H5Dread(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), w,
        "reading " + dataset_name(name));
}

void expect_dims(const std::vector<hsize_t>& got, const std::vector<hsize_t>& want,
                 const char* name, const Where& w) {
  if (got != want) {
    auto show = [](const std::vector<hsize_t>& d) {
      std::string s = "[";
      for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
      return s + "]";
    };
    throw InputError("'" + w.file + "': dataset '" + name + "' of " + w.what + " has shape " +
                     show(got) + ", expected " + show(want));
  }
}

std::vector<std::string> group_members(hid_t group, const Where& w) {
  H5G_info_t info;
  check(H5Gget_info(group, &info), w, "listing");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t len =
        H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) fail(w, "listing");
    std::string name(static_cast<size_t>(len) + 1, '\0');
    if (H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                           H5P_DEFAULT) < 0) {
      fail(w, "listing");
    }
    name.resize(static_cast<size_t>(len));
    // Opened by name, a path would be followed link by link: only plain names are members.
    if (name.empty() || name == "." || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      refuse(w, "the link '" + clean_text(name, Text::line) + "'", "is not a plain name");
    }
    names.push_back(std::move(name));
  }
  return names;
}

}  // namespace fob::h5io
