#include "h5_mutator.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace fob::fuzz {

namespace {

// Paths a mutation may make the file point at: none exists, so a reader that followed one
// would fail rather than read or block on anything of this machine's.
constexpr const char* kNowhereFile = "/nonexistent/fob-fuzz/target.h5";
constexpr const char* kNowhereData = "/nonexistent/fob-fuzz/data.bin";
// Datasets the mutator writes whole stay below this (a results file's are a few KiB); larger
// ones are declared, never written.
constexpr size_t kMaxWrite = size_t{64} << 10;

class Rng {
 public:
  explicit Rng(unsigned seed) : gen_(seed) {}
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(gen_() % n); }
  bool one_in(size_t n) { return below(n) == 0; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[below(items.size())];
  }
  uint8_t byte() { return static_cast<uint8_t>(gen_()); }

 private:
  std::mt19937 gen_;
};

// The file's groups and datasets by path, from the root.
struct Objects {
  std::vector<std::string> groups, datasets;
};

herr_t collect(hid_t, const char* name, const H5O_info_t* info, void* data) {
  auto* objects = static_cast<Objects*>(data);
  const std::string path = std::strcmp(name, ".") == 0 ? "/" : std::string("/") + name;
  if (info->type == H5O_TYPE_GROUP) objects->groups.push_back(path);
  if (info->type == H5O_TYPE_DATASET) objects->datasets.push_back(path);
  return 0;
}

const std::vector<std::string>& attr_names() {
  static const std::vector<std::string> names = {
      "schema",      "version",  "tuned",       "git_commit",      "created_utc", "command_line",
      "config_yaml", "backend",  "transport",   "world_size",      "hostnames",   "devices",
      "mpi_version", "blas",     "timer",       "timer_requested", "notes",       "simulated",
      "env",         "workload", "strategy",    "batch",           "seq",         "hidden",
      "ffn",         "heads",    "dtype",       "world",           "warmup",      "stored_ranks",
      "iters",       "verified", "max_abs_err", "auto_slices",     "timers",      "facts",
      "hardware",    "experts",  "top_k",       "expert_ffn",      "moe_skew",    "capacity_factor",
      "moe_seed"};
  return names;
}

const std::vector<std::string>& link_names() {
  static const std::vector<std::string> names = {
      "system",          "cases",         "summary",     "0000",         "0001",       "0002",
      "tasks",           "deps",          "round_iters", "step_seconds", "task_start", "task_end",
      "iteration_timer", "launch_seconds"};
  return names;
}

const std::vector<int64_t>& interesting() {
  static const std::vector<int64_t> values = {0,
                                              1,
                                              -1,
                                              2,
                                              3,
                                              12,
                                              127,
                                              -128,
                                              255,
                                              65536,
                                              10'000'000,
                                              std::numeric_limits<int32_t>::max(),
                                              int64_t{std::numeric_limits<int32_t>::max()} + 1,
                                              std::numeric_limits<int32_t>::min(),
                                              int64_t{1} << 40,
                                              std::numeric_limits<int64_t>::max(),
                                              std::numeric_limits<int64_t>::min()};
  return values;
}

// Text a crafted string may hold: control characters, invalid and valid UTF-8, long runs.
std::string random_text(Rng& rng) {
  static const std::vector<std::string> pieces = {
      "cpu",          "baseline", "flash:2",      "fp32", "fobench/1", "\x1b[31m",
      "\r\n",         "\n",       "\t",           "\xff", "\xc0\xaf",  "\xe2\x82",
      "\xed\xa0\x80", "\xc2\x9b", "\xe2\x82\xac", "\x7f", ",",         "%s%n"};
  std::string text;
  const size_t parts = rng.below(6);
  for (size_t i = 0; i < parts; ++i) {
    if (rng.one_in(8)) {
      text += std::string(rng.one_in(2) ? 5000 : 70, static_cast<char>('a' + rng.below(26)));
    } else if (rng.one_in(3)) {
      for (size_t n = rng.below(16); n > 0; --n) text += static_cast<char>(rng.byte() | 1);
    } else {
      text += rng.pick(pieces);
    }
  }
  return text;
}

hid_t random_string_type(Rng& rng) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  if (rng.one_in(2)) {
    H5Tset_size(type, H5T_VARIABLE);
  } else {
    H5Tset_size(type, 1 + rng.below(rng.one_in(4) ? 6000 : 80));
    const H5T_str_t pads[] = {H5T_STR_NULLTERM, H5T_STR_NULLPAD, H5T_STR_SPACEPAD};
    H5Tset_strpad(type, pads[rng.below(3)]);
  }
  H5Tset_cset(type, rng.one_in(2) ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
  return type;
}

// A datatype of any class an attribute or dataset of the schema might be given instead.
hid_t random_type(Rng& rng, hid_t original) {
  switch (rng.below(original >= 0 ? 8 : 7)) {
    case 0:
      return random_string_type(rng);
    case 1: {
      const hid_t types[] = {H5T_STD_I8LE,  H5T_STD_U8LE,  H5T_STD_I16BE, H5T_STD_I32LE,
                             H5T_STD_U32BE, H5T_STD_I64LE, H5T_STD_U64LE, H5T_STD_I64BE};
      return H5Tcopy(types[rng.below(8)]);
    }
    case 2: {
      const hid_t types[] = {H5T_IEEE_F32LE, H5T_IEEE_F64LE, H5T_IEEE_F64BE};
      return H5Tcopy(types[rng.below(3)]);
    }
    case 3: {
      const hsize_t dims[1] = {1 + rng.below(4)};
      return H5Tarray_create2(H5T_STD_I64LE, 1, dims);
    }
    case 4: {
      const hid_t type = H5Tenum_create(H5T_STD_I8LE);
      const char* names[] = {"compute", "comm", "gemm", "bogus"};
      for (int8_t i = 0; i < 4; ++i) H5Tenum_insert(type, names[i], &i);
      return type;
    }
    case 5:
      return H5Tcopy(rng.one_in(2) ? H5T_STD_B8LE : H5T_NATIVE_OPAQUE);
    case 6: {
      const hid_t type = H5Tcreate(H5T_COMPOUND, 12);
      H5Tinsert(type, "rank", 0, H5T_STD_I32LE);
      H5Tinsert(type, "bytes", 4, H5T_STD_I64LE);
      return type;
    }
    default:
      return H5Tcopy(original);
  }
}

// Whether `type`'s stored form holds pointers (variable-length data or strings, anywhere in a
// compound or array): random bytes there are addresses HDF5 would follow.
bool holds_pointers(hid_t type) {
  switch (H5Tget_class(type)) {
    case H5T_VLEN:
      return true;
    case H5T_STRING:
      return H5Tis_variable_str(type) != 0;
    case H5T_ARRAY: {
      const hid_t base = H5Tget_super(type);
      const bool held = base < 0 || holds_pointers(base);
      if (base >= 0) H5Tclose(base);
      return held;
    }
    case H5T_COMPOUND: {
      const int members = H5Tget_nmembers(type);
      bool held = members < 0;
      for (int i = 0; i < members && !held; ++i) {
        const hid_t member = H5Tget_member_type(type, static_cast<unsigned>(i));
        held = member < 0 || holds_pointers(member);
        if (member >= 0) H5Tclose(member);
      }
      return held;
    }
    default:
      return false;
  }
}

// Values of `type` for `count` elements, written as HDF5 takes them: numbers converted from
// interesting ones, strings from random text, anything else as random bytes.
void write_values(Rng& rng, hid_t type, size_t count,
                  const std::function<herr_t(hid_t, const void*)>& write) {
  const H5T_class_t kind = H5Tget_class(type);
  if (kind == H5T_INTEGER || kind == H5T_FLOAT) {
    std::vector<int64_t> ints(count);
    std::vector<double> reals(count);
    for (size_t i = 0; i < count; ++i) {
      ints[i] = rng.pick(interesting());
      reals[i] = rng.one_in(4) ? std::numeric_limits<double>::quiet_NaN()
                               : static_cast<double>(ints[i]) + 0.5;
    }
    if (kind == H5T_INTEGER) write(H5T_NATIVE_INT64, ints.data());
    if (kind == H5T_FLOAT) write(H5T_NATIVE_DOUBLE, reals.data());
    return;
  }
  if (kind == H5T_STRING && H5Tis_variable_str(type) > 0) {
    std::vector<std::string> texts(count);
    std::vector<const char*> ptrs(count);
    for (size_t i = 0; i < count; ++i) ptrs[i] = (texts[i] = random_text(rng)).c_str();
    write(type, ptrs.data());
    return;
  }
  const size_t size = H5Tget_size(type);
  if (size == 0 || count > kMaxWrite / size || holds_pointers(type)) return;
  std::vector<char> bytes(count * size);
  if (kind == H5T_STRING) {
    for (size_t i = 0; i < count; ++i) {
      const std::string text = random_text(rng);
      std::memcpy(bytes.data() + i * size, text.data(), std::min(size, text.size()));
    }
  } else {
    for (char& b : bytes) b = static_cast<char>(rng.byte());
  }
  write(type, bytes.data());
}

// A dataspace of one element (mostly), none, or several.
hid_t random_attr_space(Rng& rng) {
  switch (rng.below(6)) {
    case 0:
      return H5Screate(H5S_NULL);
    case 1: {
      const hsize_t dims[1] = {rng.pick(std::vector<hsize_t>{0, 1, 2, 12})};
      return H5Screate_simple(1, dims, nullptr);
    }
    case 2: {
      const hsize_t dims[2] = {1 + rng.below(2), 1 + rng.below(3)};
      return H5Screate_simple(2, dims, nullptr);
    }
    default:
      return H5Screate(H5S_SCALAR);
  }
}

void replace_attribute(Rng& rng, hid_t file, const Objects& objects) {
  const hid_t obj = H5Oopen(file, rng.pick(objects.groups).c_str(), H5P_DEFAULT);
  if (obj < 0) return;
  const std::string name = rng.pick(attr_names());
  hid_t original = -1;
  if (H5Aexists(obj, name.c_str()) > 0) {
    const hid_t old = H5Aopen(obj, name.c_str(), H5P_DEFAULT);
    original = H5Aget_type(old);
    H5Aclose(old);
    H5Adelete(obj, name.c_str());
  }
  if (!rng.one_in(5)) {
    const hid_t type = random_type(rng, original);
    const hid_t space = random_attr_space(rng);
    const hid_t attr = H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
    const hssize_t count = H5Sget_simple_extent_npoints(space);
    if (attr >= 0 && count > 0) {
      write_values(rng, type, static_cast<size_t>(count),
                   [&](hid_t mem, const void* buf) { return H5Awrite(attr, mem, buf); });
    }
    if (attr >= 0) H5Aclose(attr);
    H5Sclose(space);
    H5Tclose(type);
  }
  if (original >= 0) H5Tclose(original);
  H5Oclose(obj);
}

// The dims of a replacement dataset: its own, one off, or far beyond what the file stores.
std::vector<hsize_t> random_dims(Rng& rng, const std::vector<hsize_t>& own) {
  const int rank = rng.one_in(4) ? static_cast<int>(rng.below(4)) : static_cast<int>(own.size());
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  for (size_t i = 0; i < dims.size(); ++i) {
    const hsize_t base = i < own.size() ? own[i] : 1;
    const std::vector<hsize_t> choices = {
        base, base + 1,   base > 0 ? base - 1 : 0, 0,
        2,    10'000'000, hsize_t{1} << 31,        hsize_t{1} << 40};
    dims[i] = rng.one_in(3) ? rng.pick(choices) : base;
  }
  return dims;
}

// Creation properties for a dataset of `dims`: chunks (huge ones only where nothing is
// written: HDF5 would fill them in memory), filters, external or virtual storage, compact.
hid_t random_dcpl(Rng& rng, const std::vector<hsize_t>& dims, bool written, bool& chunked) {
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  chunked = dims.empty() ? false : rng.one_in(2);
  if (chunked) {
    std::vector<hsize_t> chunk(dims.size());
    for (hsize_t& c : chunk) c = !written && rng.one_in(8) ? hsize_t{1} << 20 : 1 + rng.below(4);
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
    if (rng.one_in(4)) H5Pset_deflate(dcpl, 1);
    if (rng.one_in(6)) H5Pset_shuffle(dcpl);
    if (rng.one_in(6)) H5Pset_fletcher32(dcpl);
  } else if (rng.one_in(5)) {
    H5Pset_external(dcpl, kNowhereData, 0, H5F_UNLIMITED);
  } else if (rng.one_in(4) && !dims.empty()) {
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    H5Pset_virtual(dcpl, space, rng.one_in(2) ? kNowhereFile : ".", "/cases", space);
    H5Sclose(space);
  } else if (rng.one_in(3)) {
    H5Pset_layout(dcpl, H5D_COMPACT);
  }
  return dcpl;
}

void replace_dataset(Rng& rng, hid_t file, const Objects& objects) {
  const std::string path = rng.pick(objects.datasets);
  const hid_t old = H5Dopen2(file, path.c_str(), H5P_DEFAULT);
  if (old < 0) return;
  const hid_t original = H5Dget_type(old);
  const hid_t old_space = H5Dget_space(old);
  std::vector<hsize_t> own(static_cast<size_t>(std::max(H5Sget_simple_extent_ndims(old_space), 0)));
  H5Sget_simple_extent_dims(old_space, own.data(), nullptr);
  H5Sclose(old_space);
  H5Dclose(old);
  const hid_t type = rng.one_in(2) ? H5Tcopy(original) : random_type(rng, original);
  H5Tclose(original);
  const std::vector<hsize_t> dims = random_dims(rng, own);
  uint64_t count = 1;
  for (hsize_t d : dims) count = d != 0 && count > kMaxWrite / d ? kMaxWrite + 1 : count * d;
  const bool written = count > 0 && count * H5Tget_size(type) <= kMaxWrite;
  bool chunked = false;
  const hid_t dcpl = random_dcpl(rng, dims, written, chunked);
  const std::vector<hsize_t> max_dims(dims.size(), H5S_UNLIMITED);
  const hid_t space = dims.empty() ? H5Screate(H5S_SCALAR)
                                   : H5Screate_simple(static_cast<int>(dims.size()), dims.data(),
                                                      chunked ? max_dims.data() : nullptr);
  H5Ldelete(file, path.c_str(), H5P_DEFAULT);
  const hid_t dset = H5Dcreate2(file, path.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  // Writing through a virtual dataset whose source is itself (a relinked /cases) recurses in
  // HDF5 until the stack ends.
  if (dset >= 0 && written && H5Pget_layout(dcpl) != H5D_VIRTUAL) {
    write_values(rng, type, static_cast<size_t>(count), [&](hid_t mem, const void* buf) {
      return H5Dwrite(dset, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    });
  }
  if (dset >= 0) H5Dclose(dset);
  H5Sclose(space);
  H5Pclose(dcpl);
  H5Tclose(type);
}

// Runs `change` on a dataset of the file chosen at random, with its type and dataspace.
void on_dataset(Rng& rng, hid_t file, const Objects& objects,
                const std::function<void(hid_t, hid_t, hid_t)>& change) {
  const hid_t dset = H5Dopen2(file, rng.pick(objects.datasets).c_str(), H5P_DEFAULT);
  if (dset < 0) return;
  const hid_t type = H5Dget_type(dset);
  const hid_t space = H5Dget_space(dset);
  change(dset, type, space);
  H5Sclose(space);
  H5Tclose(type);
  H5Dclose(dset);
}

// Whether a dataset maps others' storage (a virtual dataset the mutator made): writing through
// one that maps itself recurses in HDF5 until the stack ends.
bool is_virtual(hid_t dset) {
  const hid_t dcpl = H5Dget_create_plist(dset);
  const bool mapped = dcpl < 0 || H5Pget_layout(dcpl) == H5D_VIRTUAL;
  if (dcpl >= 0) H5Pclose(dcpl);
  return mapped;
}

// Some of a dataset's stored bytes set at random: task kinds, labels, dependencies, timer
// indices and round counts the reader must check.
void poke_values(Rng& rng, hid_t dset, hid_t type, hid_t space) {
  if (is_virtual(dset)) return;
  const hssize_t count = H5Sget_simple_extent_npoints(space);
  const size_t size = H5Tget_size(type);
  if (count <= 0 || size == 0 || holds_pointers(type) ||
      static_cast<size_t>(count) > kMaxWrite / size) {
    return;
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * size);
  if (H5Dread(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) < 0) return;
  for (size_t n = 1 + rng.below(8); n > 0; --n) {
    const size_t at = rng.below(bytes.size());
    bytes[at] = rng.one_in(2) ? rng.byte() : static_cast<uint8_t>(rng.pick(interesting()));
  }
  H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
}

void resize_dataset(Rng& rng, hid_t dset, hid_t space) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank <= 0) return;
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  const size_t at = rng.below(dims.size());
  const hsize_t to = rng.pick(
      std::vector<hsize_t>{0, 1, dims[at] + 1, 10'000'000, hsize_t{1} << 31, hsize_t{1} << 40});
  // Shrinking makes HDF5 visit every chunk position cut off: only where there are few. A dim
  // of 0 makes the element count 0 whatever the others, so the positions count each dim as
  // at least 1 (HDF5 1.10.8 spent minutes in H5D__chunk_prune_by_extent on [2^40, 0]).
  constexpr hsize_t kMaxPositions = hsize_t{1} << 16;
  hsize_t positions = 1;
  for (const hsize_t d : dims) {
    positions = std::max<hsize_t>(d, 1) > kMaxPositions / positions
                    ? kMaxPositions + 1
                    : positions * std::max<hsize_t>(d, 1);
  }
  if (to >= dims[at] || positions <= kMaxPositions) {
    dims[at] = to;
    H5Dset_extent(dset, dims.data());
  }
}

// A link of any kind where the reader looks for an object: soft, external, a second hard link
// (a cycle, where it names a group above), or none.
void relink(Rng& rng, hid_t file, const Objects& objects) {
  const std::string group = rng.pick(objects.groups);
  const std::string name = rng.pick(link_names());
  const hid_t loc = H5Gopen2(file, group.c_str(), H5P_DEFAULT);
  if (loc < 0) return;
  if (H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0) H5Ldelete(loc, name.c_str(), H5P_DEFAULT);
  std::vector<std::string> targets = objects.groups;
  targets.insert(targets.end(), objects.datasets.begin(), objects.datasets.end());
  const std::string target = rng.pick(targets);
  switch (rng.below(5)) {
    case 0:
      H5Lcreate_soft(rng.one_in(4) ? "/nonexistent" : target.c_str(), loc, name.c_str(),
                     H5P_DEFAULT, H5P_DEFAULT);
      break;
    case 1:
      H5Lcreate_external(kNowhereFile, "/", loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
      break;
    case 2:
      H5Lcreate_hard(file, target.c_str(), loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
      break;
    case 3:
      // A copy of a case or a dataset: never of a group holding `loc`, which would copy itself.
      if (target.rfind("/cases/", 0) == 0 || group.rfind(target, 0) != 0) {
        H5Ocopy(file, target.c_str(), loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT);
      }
      break;
    default:
      break;  // deleted
  }
  H5Gclose(loc);
}

void mutate(Rng& rng, hid_t file) {
  Objects objects;
  H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, collect, &objects, H5O_INFO_BASIC);
  if (objects.groups.empty()) return;
  const size_t choice = rng.below(objects.datasets.empty() ? 2 : 6);
  if (choice == 0) replace_attribute(rng, file, objects);
  if (choice == 1) relink(rng, file, objects);
  if (choice == 2) replace_dataset(rng, file, objects);
  if (choice == 3 || choice == 5) {
    on_dataset(rng, file, objects,
               [&](hid_t dset, hid_t type, hid_t space) { poke_values(rng, dset, type, space); });
  }
  if (choice == 4) {
    on_dataset(rng, file, objects,
               [&](hid_t dset, hid_t, hid_t space) { resize_dataset(rng, dset, space); });
  }
}

}  // namespace

std::vector<char> mutate_results_image(const uint8_t* data, size_t size, size_t max_size,
                                       unsigned seed) {
  static unsigned long opened = 0;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (size == 0) return {};
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_core(fapl, 1 << 16, false);
  H5Pset_file_image(fapl, const_cast<uint8_t*>(data), size);
  // Closing the file closes whatever a mutation left open, so nothing outlives the input and
  // HDF5's exit handler has no half-mutated file to close.
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  // A name no file has: the core driver opens a file image under a name that must not exist.
  const std::string name = "/dev/null/fob-fuzz-mutate-" + std::to_string(opened++);
  const hid_t file = H5Fopen(name.c_str(), H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  if (file < 0) return {};
  Rng rng(seed);
  for (size_t n = 1 + rng.below(3); n > 0; --n) mutate(rng, file);
  std::vector<char> out;
  if (H5Fflush(file, H5F_SCOPE_GLOBAL) >= 0) {
    const ssize_t bytes = H5Fget_file_image(file, nullptr, 0);
    if (bytes > 0 && static_cast<size_t>(bytes) <= max_size) {
      out.resize(static_cast<size_t>(bytes));
      if (H5Fget_file_image(file, out.data(), out.size()) != bytes) out.clear();
    }
  }
  H5Fclose(file);
  H5Eclear2(H5E_DEFAULT);
  return out;
}

}  // namespace fob::fuzz
