#include "h5_util.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

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

H5Id open_attr(hid_t obj, const char* name, const Where& w) {
  return H5Id(
      check_id(H5Aopen(obj, name, H5P_DEFAULT), w, std::string("opening attribute '") + name + "'"),
      H5Aclose);
}

// Reads fixed- and variable-length string attributes alike, so files touched by h5py (which
// writes variable-length ones) read back too.
std::string read_attr_str(hid_t obj, const char* name, const Where& w) {
  H5Id attr = open_attr(obj, name, w);
  H5Id ftype = make_type(H5Aget_type(attr), w);
  const std::string op = std::string("reading attribute '") + name + "'";
  if (H5Tget_class(ftype) != H5T_STRING) {
    throw InputError("'" + w.file + "': attribute '" + name + "' " + w.what + " is not a string");
  }
  H5Id space(check_id(H5Aget_space(attr), w, op), H5Sclose);
  if (H5Sget_simple_extent_npoints(space) != 1) {
    throw InputError("'" + w.file + "': attribute '" + name + "' " + w.what +
                     " is not a single string");
  }
  if (H5Tis_variable_str(ftype) > 0) {
    H5Id mtype = make_type(H5Tcopy(H5T_C_S1), w);
    check(H5Tset_size(mtype, H5T_VARIABLE), w, op);
    check(H5Tset_cset(mtype, H5Tget_cset(ftype)), w, op);
    char* data = nullptr;
    check(H5Aread(attr, mtype, &data), w, op);
    std::string value = data ? data : "";
    H5free_memory(data);
    return value;
  }
  const size_t len = H5Tget_size(ftype);
  std::vector<char> buf(len + 1, '\0');
  check(H5Aread(attr, ftype, buf.data()), w, op);
  return from_fixed(buf.data(), len);
}

namespace {

void read_attr_num(hid_t obj, const char* name, hid_t mem_type, void* value, const Where& w) {
  H5Id attr = open_attr(obj, name, w);
  check(H5Aread(attr, mem_type, value), w, std::string("reading attribute '") + name + "'");
}

}  // namespace

int64_t read_attr_i64(hid_t obj, const char* name, const Where& w) {
  int64_t value = 0;
  read_attr_num(obj, name, H5T_NATIVE_INT64, &value, w);
  return value;
}

double read_attr_f64(hid_t obj, const char* name, const Where& w) {
  double value = 0;
  read_attr_num(obj, name, H5T_NATIVE_DOUBLE, &value, w);
  return value;
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

// Opens a dataset, checks its rank and returns its dims.
H5Id open_dataset(hid_t loc, const char* name, int rank, std::vector<hsize_t>& dims,
                  const Where& w) {
  if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) {
    throw InputError("'" + w.file + "': " + w.what + " has no dataset '" + name + "'");
  }
  H5Id dset(
      check_id(H5Dopen2(loc, name, H5P_DEFAULT), w, std::string("opening dataset '") + name + "'"),
      H5Dclose);
  H5Id space(check_id(H5Dget_space(dset), w, "reading a dataspace"), H5Sclose);
  if (H5Sget_simple_extent_ndims(space) != rank) {
    throw InputError("'" + w.file + "': dataset '" + name + "' of " + w.what + " should have " +
                     std::to_string(rank) + " dimensions");
  }
  dims.assign(static_cast<size_t>(rank), 0);
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return dset;
}

void read_dataset(hid_t dset, hid_t mem_type, void* data, size_t count, const char* name,
                  const Where& w) {
  if (count == 0) return;
  check(H5Dread(dset, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), w,
        std::string("reading dataset '") + name + "'");
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
    names.push_back(std::move(name));
  }
  return names;
}

}  // namespace fob::h5io
