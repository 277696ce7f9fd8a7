// Reading results files (docs/results-schema.md): every attribute and dataset through the checked
// readers of h5_util.h, from the file's bytes in memory (h5_reader.h).
#include "h5_reader.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "fob/moe_keys.h"
#include "fob/plan.h"
#include "fob/results.h"
#include "fob/types.h"
#include "h5_schema.h"
#include "h5_util.h"

namespace fob {

using namespace h5io;  // NOLINT: the helpers this file is written in

namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMinInt32 = std::numeric_limits<int32_t>::min();

int32_t read_i32(hid_t obj, const char* name, int64_t low, const Where& w) {
  return static_cast<int32_t>(read_attr_int(obj, name, low, kMaxInt32, w));
}

// The MoE fields of a case with experts; files from before them, and cases of other workloads,
// hold none and read as zeros. Refused outside the keys' ranges, before anything is sized by them.
void read_moe_attrs(hid_t group, CaseResult& c, const Where& w) {
  for (const auto& [name, field] : {std::pair<const char*, int64_t*>{"experts", &c.experts},
                                    {"top_k", &c.top_k},
                                    {"expert_ffn", &c.expert_ffn},
                                    {"moe_seed", &c.moe_seed}}) {
    *field = has_attr(group, name)
                 ? read_attr_int(group, name, 0, std::numeric_limits<int64_t>::max(), w)
                 : 0;
  }
  for (const auto& [name, field] : {std::pair<const char*, double*>{"moe_skew", &c.moe_skew},
                                    {"capacity_factor", &c.capacity_factor}}) {
    *field = has_attr(group, name) ? read_attr_f64(group, name, w) : 0;
  }
  if (const std::string problem = recorded_moe_problem(c.moe()); !problem.empty()) {
    throw InputError("'" + w.file + "': " + w.what + " has " + problem);
  }
}

// The attributes of /cases/<id>: what the case is, and how it was taken.
void read_case_attrs(hid_t group, CaseResult& c, const Where& w) {
  c.workload = read_attr_str(group, "workload", Text::line, w);
  c.strategy = read_attr_str(group, "strategy", Text::line, w);
  // Sizes are int32 counts in a config (config.cpp); the products later code forms of them
  // must not overflow.
  c.batch = read_attr_int(group, "batch", 0, kMaxInt32, w);
  c.seq = read_attr_int(group, "seq", 0, kMaxInt32, w);
  c.hidden = read_attr_int(group, "hidden", 0, kMaxInt32, w);
  c.ffn = read_attr_int(group, "ffn", 0, kMaxInt32, w);
  // Files from before attention recorded no head count: the count a run of the same config
  // records now (the default, which only attention depends on), so that the case keys agree.
  c.heads = has_attr(group, "heads") ? read_attr_int(group, "heads", 0, kMaxInt32, w)
                                     : Shape{.hidden = c.hidden}.head_count();
  read_moe_attrs(group, c, w);
  c.dtype = read_attr_str(group, "dtype", Text::line, w);
  c.world = read_i32(group, "world", 0, w);
  c.iters = read_i32(group, "iters", 0, w);
  c.warmup = read_i32(group, "warmup", 0, w);
  // -1: not known, or a file from before the attribute.
  c.transfer_sms =
      has_attr(group, "transfer_sms")
          ? static_cast<int32_t>(read_attr_int(group, "transfer_sms", -1, kMaxDeviceUnits, w))
          : -1;
  c.verified = static_cast<int32_t>(read_attr_int(group, "verified", -1, 1, w));
  c.max_abs_err = read_attr_f64(group, "max_abs_err", w);
  if (has_attr(group, "auto_slices")) {
    c.auto_slices = read_attr_str(group, "auto_slices", Text::list, w);
  }
  if (has_attr(group, "stored_ranks")) c.stored = read_i32(group, "stored_ranks", 0, w);
  if (!c.stored_fits()) {
    throw InputError("'" + w.file + "': " + w.what + " has stored_ranks " +
                     std::to_string(c.stored) + ", which does not divide its world " +
                     std::to_string(c.world));
  }
}

// A label as the file held it (no terminating NUL where the file's string type is the memory
// one, which HDF5 then copies as it is), cleaned and cut back to kLabelChars at a character.
void clean_label(TaskLabel& label) {
  const std::string raw(label.text, strnlen(label.text, TaskLabel::kLabelChars));
  std::string text = clean_text(raw, Text::line);
  size_t cut = std::min(text.size(), TaskLabel::kLabelChars);
  while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  text.resize(cut);
  label = TaskLabel(text);
}

void read_tasks(hid_t group, CaseResult& c, const Where& w) {
  std::vector<hsize_t> dims;
  H5Id dset = open_dataset(group, "tasks", 2, H5T_COMPOUND, sizeof(TaskRecord), dims, w);
  const hsize_t world = static_cast<hsize_t>(c.ranks());
  if (dims[0] != world) expect_dims(dims, {world, dims[1]}, "tasks", w);
  c.max_tasks = static_cast<int32_t>(dims[1]);
  c.tasks.resize(dims[0] * dims[1]);
  const bool enums = tasks_have_enums(dset, w);
  H5Id mem = task_mem_type(w, enums);
  read_dataset(dset, mem, c.tasks.data(), c.tasks.size(), "tasks", w);
  for (TaskRecord& t : c.tasks) {
    clean_label(t.label);
    // Plain int8 (older files) may hold any value; an enum HDF5 could not map reads as -1.
    if (t.stream < 0 || t.stream >= kNumStreams || t.kind < 0 || t.kind >= kNumTaskKinds) {
      throw InputError("'" + w.file + "': dataset 'tasks' of " + w.what + " has a task of stream " +
                       std::to_string(t.stream) + " and kind " + std::to_string(t.kind) +
                       ", which name no stream and kind");
    }
  }
}

void read_deps(hid_t group, CaseResult& c, const Where& w) {
  std::vector<hsize_t> dims;
  H5Id dset = open_dataset(group, "deps", 2, H5T_INTEGER, sizeof(int32_t), dims, w);
  expect_dims(dims, {dims[0], 3}, "deps", w);
  std::vector<int32_t> flat(dims[0] * 3);
  read_dataset(dset, H5T_NATIVE_INT32, flat.data(), flat.size(), "deps", w);
  c.deps.resize(dims[0]);
  for (size_t i = 0; i < c.deps.size(); ++i) {
    c.deps[i] = DepRecord{flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]};
  }
}

// A file from before rounds were recorded has none: CaseResult::rounds() reads it as one.
void read_rounds(hid_t group, CaseResult& c, const Where& w) {
  if (!has_link(group, "round_iters", w)) return;
  std::vector<hsize_t> dims;
  H5Id dset = open_dataset(group, "round_iters", 1, H5T_INTEGER, sizeof(int32_t), dims, w);
  c.round_iters.resize(dims[0]);
  read_dataset(dset, H5T_NATIVE_INT32, c.round_iters.data(), c.round_iters.size(), "round_iters",
               w);
  int64_t sum = 0;
  for (int32_t n : c.round_iters) {
    if (n < 0)
      throw InputError("'" + w.file + "': " + w.what + " has a round of " + std::to_string(n) +
                       " iterations");
    sum += n;
  }
  if (sum != c.iters) {
    throw InputError("'" + w.file + "': " + w.what + " has rounds of " + std::to_string(sum) +
                     " iterations in all, not its " + std::to_string(c.iters));
  }
}

void read_timings(hid_t group, CaseResult& c, const Where& w) {
  // The arrays hold the stored ranks (all of them without stored_ranks).
  const hsize_t world = static_cast<hsize_t>(c.ranks());
  const hsize_t iters = static_cast<hsize_t>(c.iters);
  const hsize_t tasks = static_cast<hsize_t>(c.max_tasks);
  read_array(group, "step_seconds", H5T_FLOAT, H5T_NATIVE_DOUBLE, {iters, world}, c.step_seconds,
             w);
  read_array(group, "task_start", H5T_FLOAT, H5T_NATIVE_DOUBLE, {iters, world, tasks}, c.task_start,
             w);
  read_array(group, "task_end", H5T_FLOAT, H5T_NATIVE_DOUBLE, {iters, world, tasks}, c.task_end, w);
}

// /cases/<name>: `name` as the file has it, to open it by.
CaseResult read_case(hid_t cases_group, const std::string& name, const Where& wc) {
  CaseResult c;
  c.id = clean_text(name, Text::line);
  Where w{wc.file, "case '/cases/" + c.id + "'", wc.budget};
  H5Id group = open_group(cases_group, name.c_str(), w);
  read_case_attrs(group, c, w);
  read_tasks(group, c, w);
  read_deps(group, c, w);
  read_rounds(group, c, w);
  read_timings(group, c, w);
  read_case_timers(group, c, w);
  read_case_hardware(group, c, w);
  read_case_moe_load(group, c, w);
  return c;
}

std::string opt_str(hid_t obj, const char* name, Text kind, const Where& w) {
  return has_attr(obj, name) ? read_attr_str(obj, name, kind, w) : std::string();
}

void read_system(hid_t file, SystemInfo& s, const Where& root) {
  Where w{root.file, "/system", root.budget};
  H5Id sys = open_group(file, "system", w);
  s.backend = opt_str(sys, "backend", Text::line, w);
  s.transport = opt_str(sys, "transport", Text::line, w);
  s.world_size = has_attr(sys, "world_size") ? read_i32(sys, "world_size", 0, w) : 0;
  s.copy_engines =
      has_attr(sys, "copy_engines")
          ? static_cast<int32_t>(read_attr_int(sys, "copy_engines", -1, kMaxDeviceUnits, w))
          : -1;
  s.hostnames = opt_str(sys, "hostnames", Text::list, w);
  s.devices = opt_str(sys, "devices", Text::list, w);
  // MPICH's version text has several lines; Open MPI's one.
  s.mpi_version = opt_str(sys, "mpi_version", Text::lines, w);
  s.nccl_version = opt_str(sys, "nccl_version", Text::line, w);
  s.cuda_version = opt_str(sys, "cuda_version", Text::line, w);
  s.blas = opt_str(sys, "blas", Text::line, w);
  s.link_emulation = opt_str(sys, "link_emulation", Text::line, w);
  s.timer = has_attr(sys, "timer") ? read_attr_str(sys, "timer", Text::line, w) : kTimerUnknown;
  s.timer_requested = opt_str(sys, "timer_requested", Text::line, w);
  s.notes = opt_str(sys, "notes", Text::lines, w);
  s.simulated = opt_str(sys, "simulated", Text::lines, w);
  s.env = opt_str(sys, "env", Text::lines, w);
  s.hardware = opt_str(sys, "hardware", Text::lines, w);
}

// The root's schema and version: InputError unless a fobench file this fobench reads.
void check_schema(hid_t file, const Where& w) {
  const std::string not_ours = "'" + w.file + "' is not a fobench results file";
  if (!has_attr(file, "schema")) throw InputError(not_ours + " (no 'schema' attribute)");
  std::string schema;
  try {
    schema = read_attr_str(file, "schema", Text::line, w);
  } catch (const InputError&) {
    throw InputError(not_ours + " ('schema' is not a string)");
  }
  if (schema.rfind("fobench/", 0) != 0) throw InputError(not_ours + " (schema '" + schema + "')");
  // Another fobench/N is another layout altogether, not a later version of this one.
  if (schema != kSchema) {
    throw InputError("'" + w.file + "': schema '" + schema + "' is not one this fobench reads ('" +
                     kSchema + "')");
  }
  if (!has_attr(file, "version")) throw InputError(not_ours + " (no 'version' attribute)");
  const int64_t version = read_attr_int(file, "version", 1, kMaxInt32, w);
  if (version > kSchemaVersion) {
    throw InputError("'" + w.file + "': schema version " + std::to_string(version) +
                     " is newer than this fobench reads (" + std::to_string(kSchemaVersion) + ")");
  }
}

ResultFile read_file(hid_t file, const Where& w) {
  check_schema(file, w);
  ResultFile out;
  out.run.git_commit = opt_str(file, "git_commit", Text::line, w);
  out.run.created_utc = opt_str(file, "created_utc", Text::line, w);
  out.run.run_id = opt_str(file, "run_id", Text::line, w);
  out.run.command_line = opt_str(file, "command_line", Text::lines, w);
  out.run.config_yaml = opt_str(file, "config_yaml", Text::lines, w);
  out.run.tuned =
      has_attr(file, "tuned") && read_attr_int(file, "tuned", kMinInt32, kMaxInt32, w) != 0;
  if (has_link(file, "system", w)) read_system(file, out.system, w);
  // A .partial file interrupted before its first case may still lack /cases: it has none.
  if (has_link(file, "cases", w)) {
    Where wc{w.file, "/cases", w.budget};
    H5Id cases = open_group(file, "cases", wc);
    std::vector<std::string> names = group_members(cases, wc);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) out.cases.push_back(read_case(cases, name, wc));
  }
  return out;
}

// A name no file can have (nothing exists below /dev/null), and a new one for every image:
// HDF5's core driver refuses to open an image under the name of a file that exists (and would
// open a FIFO of that name to see), and takes two open files of one name for the same file.
std::string image_name() {
  static std::atomic<unsigned long> count{0};
  return "/dev/null/fobench-image-" + std::to_string(count++);
}

ResultFile read_image_unchecked(const std::string& path, const std::vector<char>& image) {
  H5Eclear2(H5E_DEFAULT);
  if (image.empty()) throw InputError("cannot open '" + path + "' as HDF5: the file is empty");
  H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.valid() || H5Pset_fapl_core(fapl, 1 << 16, false) < 0 ||
      H5Pset_file_image(fapl, const_cast<char*>(image.data()), image.size()) < 0 ||
      // Closing the file closes whatever an error path left open: nothing outlives the read.
      H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
    throw RuntimeFault("cannot read '" + path + "' from memory: " + h5_error_text());
  }
  const hid_t raw = H5Fopen(image_name().c_str(), H5F_ACC_RDONLY, fapl);
  if (raw < 0) throw InputError("cannot open '" + path + "' as HDF5: " + h5_error_text());
  H5Id file(raw, H5Fclose);
  ReadBudget budget(image.size());
  return read_file(file, Where{path, "/", &budget});
}

}  // namespace

ResultFile read_h5_image(const std::string& path, const std::vector<char>& image) {
  silence_hdf5();
  try {
    return read_image_unchecked(path, image);
  } catch (const RuntimeFault& e) {
    // A file that opens but does not read back is damaged input (exit 2), not a run fault.
    throw InputError(std::string("cannot read '") + path + "': " + e.what());
  }
}

}  // namespace fob
