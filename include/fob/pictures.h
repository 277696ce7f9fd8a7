// Pictures of a results file as SVG, written directly so that no plotting stack is needed and
// any browser renders them. They read only the file (no MPI, no GPU).
#pragma once

#include <iosfwd>
#include <string>

#include "fob/results.h"

namespace fob {

struct TimelineOptions {
  std::string case_id;  // empty: the first case that is not a reference mode
  int iter = -1;        // -1: the iteration whose step time is the case's median
};

// A Gantt chart of one iteration of one case: one lane per rank and stream, one rect per task
// coloured by kind, the waits that dependencies caused drawn as the gaps they made, exposed
// communication shaded, time axis in ms. InputError when the case or iteration is absent.
void write_timeline_svg(std::ostream& out, const ResultFile& file, const TimelineOptions& options);

// One stacked bar per case (strategy within shape): T_comp, slicing penalty, exposed
// communication, with each shape's T_lb drawn as a line across its bars.
void write_breakdown_svg(std::ostream& out, const ResultFile& file);

// Speedup over baseline of every strategy along the sweep's x-axis: `x_field` (report's --x),
// or the case field that tells the shapes apart on its own (tokens, seq, world, ...; the fields
// that change with it are noted, not drawn as lines of their own), or, for a file of one shape,
// the strategies' slice counts. InputError when x_field is no numeric case field
// (case_fields.h) or does not vary in the file.
void write_speedup_svg(std::ostream& out, const ResultFile& file, const std::string& x_field = "");

// The token picture of an MoE case (its CaseResult::moe_load): a heatmap of source rank x
// destination rank token choices with the counts in the cells, each rank's load and received
// bytes, and a bar per expert coloured by its rank under the count of dropped choices.
// `case_id` as select_case takes it; empty: the first case with a load that is no reference
// mode. InputError when the case has no experts or records no load.
void write_tokens_svg(std::ostream& out, const ResultFile& file, const std::string& case_id);

}  // namespace fob
