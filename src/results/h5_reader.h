// Reading a results file (docs/results-schema.md) from its bytes, every object checked by the
// readers of h5_util.h: a file from anywhere is refused as bad input (exit 2), never followed
// out of itself, never allowed to allocate what it only declares.
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "fob/results.h"
#include "h5_util.h"

namespace fob {

// Reads a results file from its bytes already in memory (HDF5's core driver: nothing on disk
// is opened); `path` only names it in messages. InputError when it is not a fobench file, has a
// newer schema, or anything in it is not as the writer makes it.
ResultFile read_h5_image(const std::string& path, const std::vector<char>& image);

}  // namespace fob

namespace fob::h5io {

// The `tasks` row in memory (TaskRecord), defined beside the writer (h5_results.cpp). Files
// from before `stream` and `kind` were enums hold plain int8 there, which HDF5 does not convert
// to an enum: `enums` says which the file has, as tasks_have_enums() tells.
H5Id task_mem_type(const Where& w, bool enums = true);
bool tasks_have_enums(hid_t dset, const Where& w);

}  // namespace fob::h5io
