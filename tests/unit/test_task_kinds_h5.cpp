// Task kinds in results files: the `tasks` dataset's enum names every kind task_kind_info
// knows, and a file written before the newest kinds existed (its enum ends earlier) reads the
// same, since HDF5 converts enums by name.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <string>
#include <vector>

#include "../common/small_case.h"
#include "../common/temp_dir.h"
#include "fob/plan.h"
#include "fob/result_files.h"
#include "fob/results.h"

namespace fob {
namespace {

// A one-rank file whose tasks are of `kinds`, in order.
std::string file_with_kinds(const TempDir& dir, const std::vector<TaskKind>& kinds) {
  CaseResult c = small_case("0001", 1);
  c.tasks.clear();
  for (size_t i = 0; i < kinds.size(); ++i) {
    c.tasks.push_back(TaskRecord{0, static_cast<int32_t>(i), 0, static_cast<int8_t>(kinds[i]), -1,
                                 0, 0, to_string(kinds[i])});
  }
  c.max_tasks = static_cast<int32_t>(kinds.size());
  const std::string path = dir.file("run.h5");
  ResultWriter writer(path, false, RunInfo{"abc", "2026-01-01T00:00:00Z", "fobench run", "a: 1\n"},
                      small_system("cpu", "mpi", 1, "host steady_clock"));
  writer.add_case(c);
  writer.finish();
  return path;
}

std::vector<int> kinds_read(const std::string& path) {
  const ResultFile file = read_results(path);
  std::vector<int> kinds;
  for (const TaskRecord& t : file.cases.at(0).tasks) kinds.push_back(t.kind);
  return kinds;
}

// Closes the HDF5 ids it is given at the end of the scope, last first.
struct Ids {
  std::vector<std::pair<hid_t, herr_t (*)(hid_t)>> ids;
  hid_t operator()(hid_t id, herr_t (*close)(hid_t)) {
    EXPECT_GE(id, 0);
    ids.emplace_back(id, close);
    return id;
  }
  ~Ids() {
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) it->second(it->first);
  }
};

TEST(TaskKindsInFiles, TheEnumNamesEveryKind) {
  TempDir dir;
  const std::string path = file_with_kinds(dir, {TaskKind::gather, TaskKind::glu});
  EXPECT_EQ(kinds_read(path), (std::vector<int>{10, 11}));
  Ids ids;
  const hid_t file = ids(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  const hid_t tasks = ids(H5Dopen2(file, "/cases/0001/tasks", H5P_DEFAULT), H5Dclose);
  const hid_t row = ids(H5Dget_type(tasks), H5Tclose);
  const hid_t kind = ids(
      H5Tget_member_type(row, static_cast<unsigned>(H5Tget_member_index(row, "kind"))), H5Tclose);
  ASSERT_EQ(H5Tget_nmembers(kind), kNumTaskKinds);
  for (int k = 0; k < kNumTaskKinds; ++k) {
    const auto value = static_cast<int8_t>(k);
    char name[64] = {};
    ASSERT_GE(H5Tenum_nameof(kind, &value, name, sizeof name), 0) << k;
    EXPECT_STREQ(name, task_kind_info(k).name);
  }
}

// The `tasks` dataset written again with the kind enum a writer that knew only the first
// `known` kinds made: the same rows, an enum with fewer names.
void rewrite_with_older_enum(const std::string& path, int known) {
  Ids ids;
  const hid_t file = ids(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
  const hid_t group = ids(H5Gopen2(file, "/cases/0001", H5P_DEFAULT), H5Gclose);
  const hid_t tasks = ids(H5Dopen2(group, "tasks", H5P_DEFAULT), H5Dclose);
  const hid_t row = ids(H5Dget_type(tasks), H5Tclose);
  const hid_t space = ids(H5Dget_space(tasks), H5Sclose);
  std::vector<char> rows(H5Tget_size(row) *
                         static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
  ASSERT_GE(H5Dread(tasks, row, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), 0);
  const hid_t older = ids(H5Tenum_create(H5T_STD_I8LE), H5Tclose);
  for (int k = 0; k < known; ++k) {
    const auto value = static_cast<int8_t>(k);
    ASSERT_GE(H5Tenum_insert(older, task_kind_info(k).name, &value), 0);
  }
  const hid_t older_row = ids(H5Tcreate(H5T_COMPOUND, H5Tget_size(row)), H5Tclose);
  for (unsigned m = 0; m < static_cast<unsigned>(H5Tget_nmembers(row)); ++m) {
    char* name = H5Tget_member_name(row, m);
    const hid_t member = ids(H5Tget_member_type(row, m), H5Tclose);
    H5Tinsert(older_row, name, H5Tget_member_offset(row, m),
              std::string(name) == "kind" ? older : member);
    H5free_memory(name);
  }
  ASSERT_GE(H5Ldelete(group, "tasks", H5P_DEFAULT), 0);
  const hid_t rewritten =
      ids(H5Dcreate2(group, "tasks", older_row, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
          H5Dclose);
  ASSERT_GE(H5Dwrite(rewritten, older_row, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows.data()), 0);
}

TEST(TaskKindsInFiles, FilesFromBeforeTheNewestKindsReadTheSame) {
  TempDir dir;
  const std::string path =
      file_with_kinds(dir, {TaskKind::gemm, TaskKind::softmax_finish, TaskKind::collective});
  rewrite_with_older_enum(path, static_cast<int>(TaskKind::softmax_finish) + 1);
  EXPECT_EQ(kinds_read(path), (std::vector<int>{0, 9, 4}));
}

}  // namespace
}  // namespace fob
