// A Backend that passes every call to another one: tests derive from it and override only the
// calls they watch or change.
#pragma once

#include <string>
#include <vector>

#include "fob/backend.h"

namespace fob {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  std::string device() const override { return inner_.device(); }
  std::string blas() const override { return inner_.blas(); }
  std::string transport() const override { return inner_.transport(); }
  std::string timer() const override { return inner_.timer(); }
  void setup(const Plan& plan) override { inner_.setup(plan); }
  void release(const Plan& plan) override { inner_.release(plan); }
  void poison(const Plan& plan) override { inner_.poison(plan); }
  std::vector<double> read(const Plan& plan, int buffer) override {
    return inner_.read(plan, buffer);
  }
  void fill_timing_data(const Plan& plan) override { inner_.fill_timing_data(plan); }
  void begin(const Plan& plan, bool timed) override { inner_.begin(plan, timed); }
  void launch(const Task& task, const std::vector<int>& wait_for) override {
    inner_.launch(task, wait_for);
  }
  IterationTimes finish(double timeout_s) override { return inner_.finish(timeout_s); }
  std::vector<std::string> case_facts(const Plan& plan) override { return inner_.case_facts(plan); }
  std::vector<std::string> run_facts() override { return inner_.run_facts(); }
  int64_t bytes_needed(const Plan& plan) const override { return inner_.bytes_needed(plan); }
  int64_t bytes_free() const override { return inner_.bytes_free(); }

 protected:
  Backend& inner_;
};

}  // namespace fob
