#!/usr/bin/env python3
"""Writes a copy of one cuda backend source with one defect planted, for the cuda model to catch.

    plant.py NAME SOURCE_DIR OUT

Each defect is a text replacement that must match exactly once, so that a source that changes
under it fails the build here instead of quietly planting nothing.
"""
import pathlib
import sys

PLANTS = {
    # The wait between tasks on different streams that share a buffer, removed...
    "removed_wait": ("cuda_backend.cpp",
                     'check_.cuda(cudaStreamWaitEvent(stream, p.done[dep], 0), "cudaStreamWaitEvent");',
                     "(void)dep;  // planted: the wait is gone"),
    # ...or pointed at another task's event.
    "misdirected_wait": ("cuda_backend.cpp",
                         'check_.cuda(cudaStreamWaitEvent(stream, p.done[dep], 0), "cudaStreamWaitEvent");',
                         'check_.cuda(cudaStreamWaitEvent(stream, p.done[task.id], 0), "planted");'),
    # The B operand's transpose flipped: the shapes still agree on square operands.
    "swapped_transpose": ("cuda_tasks.cpp",
                          "const cublasOperation_t op_b = t.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;",
                          "const cublasOperation_t op_b = t.transpose_b ? CUBLAS_OP_N : CUBLAS_OP_T;"),
    # A pairwise exchange outside a group: every rank sends first and waits for its peer's
    # receive, which waits behind the peer's own send.
    "ungrouped_exchange": ("nccl_transport.cpp",
                           """  const ncclDataType_t type = nccl_type(at_.plan().dtype);
  check_.nccl(ncclGroupStart(), "ncclGroupStart");
  if (t.sends()) {
    check_.nccl(
        ncclSend(at_.device_at(t.a), at_.count(t.a), type, nccl_peer(t.send_peer), nccl_, stream),
        "ncclSend");
  }
  if (t.receives()) {
    check_.nccl(
        ncclRecv(at_.device_at(t.c), at_.count(t.c), type, nccl_peer(t.recv_peer), nccl_, stream),
        "ncclRecv");
  }
  check_.nccl(ncclGroupEnd(), "ncclGroupEnd");""",
                           """  const ncclDataType_t type = nccl_type(at_.plan().dtype);
  if (t.sends()) {
    check_.nccl(
        ncclSend(at_.device_at(t.a), at_.count(t.a), type, nccl_peer(t.send_peer), nccl_, stream),
        "ncclSend");
  }
  if (t.receives()) {
    check_.nccl(
        ncclRecv(at_.device_at(t.c), at_.count(t.c), type, nccl_peer(t.recv_peer), nccl_, stream),
        "ncclRecv");
  }"""),
    # A host synchronisation while the compute stream is being captured.
    "sync_in_capture": ("cuda_backend.cpp",
                        """                "cudaStreamBeginCapture");""",
                        """                "cudaStreamBeginCapture");
    check_.cuda(cudaStreamSynchronize(compute_), "planted: cudaStreamSynchronize");"""),
    # External correlation without the API activity it is recorded against.
    "no_api_activity": ("cupti_timer.cpp",
                        """                                     CUPTI_ACTIVITY_KIND_RUNTIME,
                                     CUPTI_ACTIVITY_KIND_DRIVER,
""", ""),
    # The references' collectives capped like the overlapping strategies' transfers.
    "capped_reference": ("nccl_transport.cpp",
                         """  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  check_.nccl(ncclCommInitRankConfig(""",
                         """  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  if (comm_sms > 0) config.maxCTAs = comm_sms;  // planted: the reference capped too
  check_.nccl(ncclCommInitRankConfig("""),
    # Plan buffers left unregistered: NCCL stages them through its own buffers.
    "unregistered": ("nccl_transport.cpp",
                     'check_.nccl(ncclCommRegister(c.comm, p.device[i], bytes, &handle), "ncclCommRegister");',
                     "(void)bytes;  // planted: not registered"),
    # Timed iterations start as they are launched: the host's launching in the step.
    "ungated": ("cuda_backend.cpp", "  gated_ = timed && gate_", "  gated_ = false && gate_"),
    # Timed iterations on the verified integers.
    "integer_timing": ("cuda_backend.cpp",
                       "  fill_timing(plan, options_.seed, prepared(plan), check_);",
                       "  (void)plan;  // planted: the verified data timed"),
    # Every GEMM leaves the comm SMs free, baseline's and compute_only's too.
    "sm_target_everywhere": ("cuda_tasks.cpp",
                             "set_sm_target(current_->beside_transfer[t.id] && comm_sms_ > 0",
                             "set_sm_target(comm_sms_ > 0"),
    # Transport ce: a receiver no longer waits for its peer's arrival flag before the tasks that
    # read what arrives...
    "ce_removed_arrival_wait": ("ce_tasks.cpp",
                                """      wait_flag(stream, own_word(world_ + op.peer), numbers.at(next++),
                "transport ce: waiting for a peer's message");""",
                                "      ++next;  // planted: the arrival wait is gone"),
    # ...a sender no longer waits for the receiver's ready flag before copying into it...
    "ce_removed_ready_wait": ("ce_tasks.cpp",
                              'wait_flag(stream, own_word(op.peer), n, "transport ce: waiting for a peer to be ready");',
                              "(void)n;  // planted: the ready wait is gone"),
    # ...or copies a row past its place in the peer's buffer.
    "ce_wrong_peer_offset": ("ce_tasks.cpp",
                             "ops.push_back({Op::Kind::send, m.peer, region + slot.offset, here, bytes});",
                             "ops.push_back({Op::Kind::send, m.peer, region + slot.offset + bytes / 2, here, bytes});"),
}


def main():
    name, source_dir, out = sys.argv[1:4]
    file, old, new = PLANTS[name]
    text = (pathlib.Path(source_dir) / file).read_text()
    if text.count(old) != 1:
        sys.exit(f"plant.py: {name}: the text to replace occurs {text.count(old)} times in {file}")
    pathlib.Path(out).write_text(text.replace(old, new))


if __name__ == "__main__":
    main()
