// Note [native backward]: an autograd node whose backward launches compiled Triton kernels from C++.
//
// The eager ops' Python backward runs on autograd's device thread, where Python costs several times what it costs on
// the calling thread (docs/benchmarks.md, host time by phase).  The op's forward, on the calling thread, works out
// everything its backward will launch (a Program: which buffers to allocate, which kernels with which grids and
// arguments) and attaches this node to its output; the backward then allocates and launches without Python.  The
// kernels are the ones Triton compiled for the Python path (their CUfunction handles), launched with the argument
// list Triton's own launcher would pass: the non-constexpr parameters in order, then the global and profile scratch
// pointers (null: the kernels use none).  Built on first use with torch.utils.cpp_extension
// (inductor_conv/kernels/native.py); no CUDA headers: the driver's cuLaunchKernel is looked up in libcuda, the
// current stream comes from c10's device guard.  The eager attention op's cuDNN route has a node here too
// (CudnnAttentionBackward, below), which calls cuDNN's backward through ATen.
#include <dlfcn.h>
#include <torch/extension.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

#include "node_compat.h"

#include <array>
#include <atomic>
#include <mutex>
#include <unordered_map>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;
using inductor_conv::MakeNode;
using inductor_conv::NodePtr;

using LaunchFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                         void**);

void* driver_symbol(const char* name) {
  static void* lib = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) h = dlopen("libcuda.so.1", RTLD_NOW);
    if (h == nullptr) throw std::runtime_error("inductor_conv native backward: libcuda.so.1 not found");
    return h;
  }();
  void* f = dlsym(lib, name);
  if (f == nullptr) throw std::runtime_error(std::string("inductor_conv native backward: ") + name + " not found");
  return f;
}

LaunchFn driver_launch() {
  static LaunchFn fn = reinterpret_cast<LaunchFn>(driver_symbol("cuLaunchKernel"));
  return fn;
}

// The device's primary context current on this thread (what Triton loaded the kernels into), as Triton's own
// launcher makes sure of: autograd's device thread has it once the runtime has run there, this covers the case
// where it has not.
void ensure_context(int device_index) {
  using GetCurrent = int (*)(void**);
  using DeviceGet = int (*)(int*, int);
  using Retain = int (*)(void**, int);
  using SetCurrent = int (*)(void*);
  static auto get_current = reinterpret_cast<GetCurrent>(driver_symbol("cuCtxGetCurrent"));
  void* ctx = nullptr;
  if (get_current(&ctx) == 0 && ctx != nullptr) return;
  static auto device_get = reinterpret_cast<DeviceGet>(driver_symbol("cuDeviceGet"));
  static auto retain = reinterpret_cast<Retain>(driver_symbol("cuDevicePrimaryCtxRetain"));
  static auto set_current = reinterpret_cast<SetCurrent>(driver_symbol("cuCtxSetCurrent"));
  int dev = 0;
  if (device_get(&dev, device_index) != 0 || retain(&ctx, dev) != 0 || set_current(ctx) != 0)
    throw std::runtime_error("inductor_conv native backward: no CUDA context for device " +
                             std::to_string(device_index));
}

// A buffer the backward allocates: empty_like(slot `like`), or empty / zeros of `shape` in `dtype` (its name:
// float32, bfloat16, float16, int32) on the device of slot 0.
struct Alloc {
  int64_t like = -1;
  std::vector<int64_t> shape;
  c10::ScalarType dtype = c10::ScalarType::Float;
  bool zero = false;
};

// One kernel argument: a tensor slot's data pointer, an int32 / int64 / fp32 value, a null pointer, or an int64
// given with each run (kCall: its value is the index into the run's call values; the attention's dropout seed).
enum ArgKind : int64_t { kSlot = 0, kI32 = 1, kI64 = 2, kF32 = 3, kNull = 4, kCall = 5 };

struct Launch {
  uintptr_t function = 0;
  unsigned grid[3] = {1, 1, 1};
  unsigned threads = 128;
  unsigned shared = 0;
  std::vector<int64_t> kinds;
  std::vector<double> values;  // the slot index or the value, per argument
};

// Slots: the saved tensors, then dy, then the allocations.  dy is given the strides and dtype of slot dy_like (a
// copy where it has others, or is not 16-byte aligned, as the kernels were compiled for); outputs[i] is the slot
// holding input i's gradient, or -1.  n_saved: how many tensors attach must be given to save (-1: any number).
// A forward Program (Note [native forward]): its slots are its inputs, then its allocations; outputs[0] is the
// slot returned, and node_saves the slots the backward's node saves (empty: the inputs as given).
struct Program {
  std::string name;
  int64_t dy_like = 0;
  int64_t n_saved = -1;
  std::vector<Alloc> allocs;
  std::vector<Launch> launches;
  std::vector<int64_t> outputs;
  std::vector<int64_t> node_saves;

  void add_alloc(int64_t like, std::vector<int64_t> shape, const std::string& dtype, bool zero) {
    c10::ScalarType t;
    if (dtype == "float32") t = c10::ScalarType::Float;
    else if (dtype == "bfloat16") t = c10::ScalarType::BFloat16;
    else if (dtype == "float16") t = c10::ScalarType::Half;
    else if (dtype == "int32") t = c10::ScalarType::Int;
    else if (dtype == "int64") t = c10::ScalarType::Long;
    else throw std::invalid_argument("add_alloc: unsupported dtype " + dtype);
    allocs.push_back(Alloc{like, std::move(shape), t, zero});
  }
  void add_launch(uintptr_t function, std::vector<int64_t> grid, int64_t threads, int64_t shared,
                  std::vector<int64_t> kinds, std::vector<double> values) {
    if (grid.size() != 3 || kinds.size() != values.size()) throw std::invalid_argument("bad launch");
    Launch l;
    l.function = function;
    for (int i = 0; i < 3; ++i) l.grid[i] = static_cast<unsigned>(grid[i]);
    l.threads = static_cast<unsigned>(threads);
    l.shared = static_cast<unsigned>(shared);
    l.kinds = std::move(kinds);
    l.values = std::move(values);
    launches.push_back(std::move(l));
  }
};

union ArgValue {
  uint64_t ptr;
  int64_t i64;
  int32_t i32;
  float f32;
};

// Allocates a Program's buffers after the slots given (the saved tensors, and dy for a backward) and makes its
// launches on the current stream of slot 0's device; `call` holds the run's kCall values.
void run_program(const Program& program, std::vector<at::Tensor>& slots, const std::vector<int64_t>& call = {}) {
  for (const auto& a : program.allocs) {
    if (a.like >= 0) {
      slots.push_back(a.zero ? at::zeros_like(slots.at(a.like)) : at::empty_like(slots.at(a.like)));
    } else {
      auto options = at::TensorOptions().dtype(a.dtype).device(slots.at(0).device());
      slots.push_back(a.zero ? at::zeros(a.shape, options) : at::empty(a.shape, options));
    }
  }
  if (program.launches.empty()) return;
  const c10::Device device = slots.at(0).device();
  void* stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device).native_handle();
  LaunchFn launch = driver_launch();
  ensure_context(device.index());
  std::vector<ArgValue> storage;
  std::vector<void*> params;
  for (const auto& l : program.launches) {
    storage.assign(l.kinds.size(), ArgValue{0});
    params.resize(l.kinds.size());
    for (size_t i = 0; i < l.kinds.size(); ++i) {
      switch (l.kinds[i]) {
        case kSlot:
          storage[i].ptr = reinterpret_cast<uint64_t>(slots.at(static_cast<size_t>(l.values[i])).data_ptr());
          break;
        case kI32: storage[i].i32 = static_cast<int32_t>(l.values[i]); break;
        case kI64: storage[i].i64 = static_cast<int64_t>(l.values[i]); break;
        case kF32: storage[i].f32 = static_cast<float>(l.values[i]); break;
        case kCall: storage[i].i64 = call.at(static_cast<size_t>(l.values[i])); break;
        default: storage[i].ptr = 0;
      }
      params[i] = &storage[i];
    }
    int err = launch(reinterpret_cast<void*>(l.function), l.grid[0], l.grid[1], l.grid[2], l.threads, 1, 1, l.shared,
                     stream, params.data(), nullptr);
    if (err != 0)
      throw std::runtime_error(program.name + ": cuLaunchKernel failed with CUresult " + std::to_string(err));
  }
}

struct ProgramBackward final : public Node {
  std::shared_ptr<const Program> program;
  std::vector<SavedVariable> saved;
  size_t num_inputs = 0;

  std::string name() const override { return program ? program->name : "InductorConvNativeBackward"; }

  variable_list apply(variable_list&& grads) override {
    variable_list result(num_inputs);
    at::Tensor dy = grads[0];
    if (!dy.defined()) return result;
    std::vector<at::Tensor> slots;
    slots.reserve(saved.size() + 1 + program->allocs.size());
    for (auto& s : saved) slots.push_back(s.unpack());
    const at::Tensor& like = slots.at(program->dy_like);
    if (dy.strides() != like.strides() || dy.scalar_type() != like.scalar_type() ||
        reinterpret_cast<uintptr_t>(dy.data_ptr()) % 16) {
      dy = at::empty_like(like).copy_(dy);
    }
    slots.push_back(dy);
    run_program(*program, slots);
    for (size_t i = 0; i < num_inputs && i < program->outputs.size(); ++i) {
      int64_t s = program->outputs[i];
      if (s >= 0 && should_compute_output(i)) result[i] = slots.at(static_cast<size_t>(s));
    }
    return result;
  }

  void release_variables() override { saved.clear(); }
};

// The eager attention op's cuDNN route (Note [cuDNN route] in inductor_conv/heuristics/attention.py): cuDNN's fused
// backward, aten::_scaled_dot_product_cudnn_attention_backward, called with dO in O's layout.  SDPA's own node passes
// dO as it comes, and cuDNN reads it as if it had O's strides (torch 2.11: dq / dk / dv off by 1-13 for a dO in
// another layout, ops/attention.py's _cudnn_attention); the Python route puts two view nodes under O for that, which
// cost autograd's device thread two more nodes a backward.  Saved: q, k, v, O, LSE, the Philox seed and offset of
// cuDNN's forward (p = 0: never read).
struct CudnnAttentionBackward final : public Node {
  std::vector<SavedVariable> saved;
  int64_t max_q = 0, max_k = 0;
  bool is_causal = false;
  double scale = 1.0;

  std::string name() const override { return "CudnnAttentionBackward"; }

  variable_list apply(variable_list&& grads) override {
    variable_list result(3);
    at::Tensor dy = grads[0];
    if (!dy.defined()) return result;
    std::vector<at::Tensor> t;
    t.reserve(saved.size());
    for (auto& s : saved) t.push_back(s.unpack());
    const at::Tensor& out = t.at(3);
    if (dy.strides() != out.strides() || dy.scalar_type() != out.scalar_type()) dy = at::empty_like(out).copy_(dy);
    auto g = at::_scaled_dot_product_cudnn_attention_backward(dy, t.at(0), t.at(1), t.at(2), out, t.at(4), t.at(5),
                                                              t.at(6), at::Tensor(), at::Tensor(), at::Tensor(),
                                                              max_q, max_k, 0.0, is_causal, scale);
    if (should_compute_output(0)) result[0] = std::get<0>(g);
    if (should_compute_output(1)) result[1] = std::get<1>(g);
    if (should_compute_output(2)) result[2] = std::get<2>(g);
    return result;
  }

  void release_variables() override { saved.clear(); }
};

std::vector<at::Tensor> undefined_as_empty(const std::vector<std::optional<at::Tensor>>& inputs) {
  std::vector<at::Tensor> ins;
  ins.reserve(inputs.size());
  for (auto& t : inputs) ins.push_back(t.has_value() ? *t : at::Tensor());
  return ins;
}

// Records `out` (cuDNN's O, made without autograd) as the output of a CudnnAttentionBackward over q, k, v.
void attach_cudnn(const at::Tensor& out, const std::vector<std::optional<at::Tensor>>& inputs,
                  const std::vector<at::Tensor>& saved, int64_t max_q, int64_t max_k, bool is_causal, double scale) {
  if (inputs.size() != 3 || saved.size() != 7)
    throw std::invalid_argument("attach_cudnn: q, k, v and seven tensors to save (q, k, v, O, LSE, seed, offset)");
  NodePtr ptr = MakeNode<CudnnAttentionBackward, NodePtr>::make();
  auto* node = static_cast<CudnnAttentionBackward*>(ptr.get());
  node->max_q = max_q;
  node->max_k = max_k;
  node->is_causal = is_causal;
  node->scale = scale;
  node->set_next_edges(torch::autograd::collect_next_edges(undefined_as_empty(inputs)));
  node->saved.reserve(saved.size());
  for (auto& t : saved) node->saved.emplace_back(t, false);
  torch::autograd::set_history(out, ptr);
}

// The eager op's cuDNN call (Note [cuDNN route]): cuDNN's fused attention forward (p = 0, no mask), and when `grad`
// its O recorded as the output of a CudnnAttentionBackward over q, k, v.  One call from Python where the route's
// Python form spent tens of microseconds wrapping cuDNN's nine outputs and recording SDPA's node and two views.
at::Tensor cudnn_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool is_causal, double scale,
                           bool grad) {
  if (!grad) {
    return std::get<0>(at::_scaled_dot_product_cudnn_attention(q, k, v, std::nullopt, false, 0.0, is_causal, false,
                                                               scale));
  }
  auto r = [&] {
    at::NoGradGuard no_grad;
    return at::_scaled_dot_product_cudnn_attention(q, k, v, std::nullopt, true, 0.0, is_causal, false, scale);
  }();
  const at::Tensor& out = std::get<0>(r);
  // O detached: no reference cycle through the node
  attach_cudnn(out, {q, k, v}, {q, k, v, out.detach(), std::get<1>(r), std::get<6>(r), std::get<7>(r)},
               std::get<4>(r).guard_int(__FILE__, __LINE__), std::get<5>(r).guard_int(__FILE__, __LINE__), is_causal,
               scale);
  return out;
}

// Note [cuDNN route from C++]: the eager op's calls that take the cuDNN route (Note [cuDNN route]) are decided
// here, in one call from the public function, instead of by the Python checks (ops/attention.py's _check_args,
// fast_path and _cudnn_eager: ~10 us of a ~100 us forward+backward at small shapes, where SDPA's own checks are
// C++).  The function admits a call only where every Python check would pass and the route would be taken, and
// answers None for anything else (bad arguments included), which then runs the Python path and gets its errors:
// exact Tensor / Parameter arguments (no subclass), no functorch transform and no dispatch mode (Note [eager fast
// path]), is_causal and enable_gqa the bools True / False, scale None or a positive finite float or int, q, k, v
// 4-d fp16 / bf16 tensors of one dtype on one CUDA device of compute capability 9.0 or more, cuDNN's SDPA backend
// on and torch's deterministic mode off, one head dim for q, k and v (a multiple of 8 in [16, 256]), k and v of
// q's batch, v of k's (B, Hkv, Sk), Hq a multiple of Hkv > 0 (and enable_gqa where they differ), no empty
// dimension, Sk > 1, more than kMaxDecodeQueries queries, Sq == Sk when causal, B and Hq <= 65535, at least
// `min_work` (config.attention_cudnn_eager_min_work: B · Hq · Sq · Sk · (D / 8)², halved when causal:
// heuristics/attention.py's eager_cudnn_work), and the layout cuDNN reads (unit-stride head dim, other strides
// multiples of 8 elements, 16-byte aligned).  tests/test_native_backward.py checks the verdicts against the Python
// gate's on random calls on the CPU (check_device false: the device, capability and cuDNN build conditions are
// skipped there).
constexpr int64_t kMaxDecodeQueries = 16;  // kernels/attention_decode.py's MAX_QUERIES: fewer run flash-decoding

// The compute capability of CUDA device `index` as major * 10 + minor, asked of the driver once per device.
int capability(int index) {
  static std::array<std::atomic<int>, 64> known{};  // major * 10 + minor + 1; 0 until asked
  if (index < 0 || index >= static_cast<int>(known.size())) return 0;
  int c = known[index].load();
  if (c > 0) return c - 1;
  using DeviceGet = int (*)(int*, int);
  using Attribute = int (*)(int*, int, int);
  static auto device_get = reinterpret_cast<DeviceGet>(driver_symbol("cuDeviceGet"));
  static auto attribute = reinterpret_cast<Attribute>(driver_symbol("cuDeviceGetAttribute"));
  int dev = 0, major = 0, minor = 0;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR: 75 / 76
  if (device_get(&dev, index) != 0 || attribute(&major, 75, dev) != 0 || attribute(&minor, 76, dev) != 0) return 0;
  known[index].store(major * 10 + minor + 1);
  return major * 10 + minor;
}

bool cudnn_layout(const at::Tensor& t) {
  auto s = t.strides();
  return s[3] == 1 && s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0 &&
         reinterpret_cast<std::uintptr_t>(t.data_ptr()) % 16 == 0;
}

// A functorch transform or a TorchDispatchMode is active: the eager ops' calls go through their custom ops then
// (Note [eager fast path] in inductor_conv/ops/eager.py; torch._C._are_functorch_transforms_active and
// _len_torch_dispatch_stack, read here).
bool transformed() {
  auto included = c10::impl::tls_local_dispatch_key_set().included_;
  return included.has(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
         included.has(c10::DispatchKey::FuncTorchDynamicLayerBackMode) || c10::impl::TorchDispatchModeTLS::stack_len();
}

// A CUDA tensor on the current device (the Programs hold the kernels Triton loaded there).
bool on_current_device(const at::Tensor& t) {
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getDevice().index() == t.device().index();
}

bool is_bool(pybind11::handle h) { return h.ptr() == Py_True || h.ptr() == Py_False; }

// A scale argument as the op takes it: None -> 1 / sqrt(head_dim); an exact float or int; 0 for anything else, or
// a value that is not positive and finite (the Python path handles those).
double positive_scale(pybind11::handle scale, int64_t head_dim) {
  double s = 0.0;
  if (scale.is_none()) {
    s = 1.0 / std::sqrt(static_cast<double>(head_dim));
  } else if (PyFloat_CheckExact(scale.ptr())) {
    s = PyFloat_AS_DOUBLE(scale.ptr());
  } else if (PyLong_CheckExact(scale.ptr())) {
    s = PyLong_AsDouble(scale.ptr());
    if (s == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      return 0.0;
    }
  }
  return s > 0.0 && std::isfinite(s) ? s : 0.0;
}

// q, k and v as the eager attention's C++ entries take a call: exact Tensor / Parameter arguments of 4 dims on one
// device, is_causal and enable_gqa True / False, no functorch transform or dispatch mode; false for anything else
// (the Python path then checks the call).
bool plain_qkv(pybind11::handle q, pybind11::handle k, pybind11::handle v, pybind11::handle is_causal,
               pybind11::handle enable_gqa, std::array<at::Tensor, 3>& qkv) {
  for (auto h : {q, k, v})
    if (!THPVariable_CheckExact(h.ptr())) return false;
  if (!is_bool(is_causal) || !is_bool(enable_gqa) || transformed()) return false;
  qkv = {THPVariable_Unpack(q.ptr()), THPVariable_Unpack(k.ptr()), THPVariable_Unpack(v.ptr())};
  for (const at::Tensor& t : qkv)
    if (t.dim() != 4 || t.device() != qkv[0].device()) return false;
  return true;
}

// The scale the route runs the call with, or 0 where it does not take the call (Note [cuDNN route from C++]).
double cudnn_route_scale(pybind11::handle q_, pybind11::handle k_, pybind11::handle v_, pybind11::handle is_causal,
                         pybind11::handle scale_, pybind11::handle enable_gqa, int64_t min_work, bool check_device) {
  std::array<at::Tensor, 3> qkv;
  if (!plain_qkv(q_, k_, v_, is_causal, enable_gqa, qkv)) return 0.0;
  const auto& [q, k, v] = qkv;
  auto dtype = q.scalar_type();
  if ((dtype != at::kHalf && dtype != at::kBFloat16) || k.scalar_type() != dtype || v.scalar_type() != dtype)
    return 0.0;
  auto& ctx = at::globalContext();
  if (!ctx.userEnabledCuDNNSDP() || ctx.deterministicAlgorithms()) return 0.0;
  if (check_device && (!q.is_cuda() || !ctx.hasCuDNN() || capability(q.device().index()) < 90)) return 0.0;
  const int64_t B = q.size(0), Hq = q.size(1), Sq = q.size(2), D = q.size(3);
  const int64_t Hkv = k.size(1), Sk = k.size(2);
  if (k.size(0) != B || v.size(0) != B || v.size(1) != Hkv || v.size(2) != Sk) return 0.0;
  if (k.size(3) != D || v.size(3) != D || D % 8 != 0 || D < 16 || D > 256) return 0.0;
  if (B == 0 || Hq == 0 || Hkv == 0 || Hq % Hkv != 0 || (Hq != Hkv && enable_gqa.ptr() != Py_True)) return 0.0;
  if (Sk <= 1 || Sq <= kMaxDecodeQueries || (is_causal.ptr() == Py_True && Sq != Sk) || B > 65535 || Hq > 65535)
    return 0.0;
  const __int128 work = static_cast<__int128>(B) * Hq * Sq * Sk * (D / 8) * (D / 8);  // < 2^104: no overflow
  if ((work >> (is_causal.ptr() == Py_True ? 1 : 0)) < min_work) return 0.0;
  if (!cudnn_layout(q) || !cudnn_layout(k) || !cudnn_layout(v)) return 0.0;
  return positive_scale(scale_, D);
}

// The eager op's cuDNN route decided and run in one call (Note [cuDNN route from C++]): O (with its
// CudnnAttentionBackward where autograd records the call), or None where the route does not take the call.
pybind11::object eager_cudnn_attention(pybind11::handle q, pybind11::handle k, pybind11::handle v,
                                       pybind11::handle is_causal, pybind11::handle scale, pybind11::handle enable_gqa,
                                       int64_t min_work) {
  double s = cudnn_route_scale(q, k, v, is_causal, scale, enable_gqa, min_work, true);
  if (s == 0.0) return pybind11::none();
  const at::Tensor& qt = THPVariable_Unpack(q.ptr());
  const at::Tensor& kt = THPVariable_Unpack(k.ptr());
  const at::Tensor& vt = THPVariable_Unpack(v.ptr());
  bool grad = at::GradMode::is_enabled() && (qt.requires_grad() || kt.requires_grad() || vt.requires_grad());
  return pybind11::cast(cudnn_attention(qt, kt, vt, is_causal.ptr() == Py_True, s, grad));
}

// Records `out` (made without autograd) as the output of a ProgramBackward over `inputs` (their gradients in that
// order), saving `saved` (slot order).
void attach(const at::Tensor& out, const std::vector<std::optional<at::Tensor>>& inputs,
            const std::vector<at::Tensor>& saved, std::shared_ptr<Program> program) {
  if (program->n_saved >= 0 && static_cast<int64_t>(saved.size()) != program->n_saved)
    throw std::invalid_argument(program->name + ": attach was given " + std::to_string(saved.size()) +
                                " tensors to save, its Program's slots need " + std::to_string(program->n_saved));
  std::vector<at::Tensor> ins = undefined_as_empty(inputs);
  NodePtr ptr = MakeNode<ProgramBackward, NodePtr>::make();
  auto* node = static_cast<ProgramBackward*>(ptr.get());
  node->program = std::move(program);
  node->num_inputs = ins.size();
  node->set_next_edges(torch::autograd::collect_next_edges(ins));
  node->saved.reserve(saved.size());
  for (auto& t : saved) node->saved.emplace_back(t, false);
  torch::autograd::set_history(out, ptr);
}

// The output of a forward Program that has run (its slots filled), recorded as the output of `backward`'s node over
// `inputs` when one is given, which saves the slots node_saves names (the output detached: no reference cycle
// through the node), or the forward's inputs.
at::Tensor finish_forward(const Program& forward, const std::vector<at::Tensor>& slots, size_t n_inputs,
                          const std::vector<std::optional<at::Tensor>>& inputs,
                          const std::shared_ptr<Program>& backward) {
  const size_t out_slot = static_cast<size_t>(forward.outputs.at(0));
  at::Tensor out = slots.at(out_slot);
  if (!backward) return out;
  std::vector<at::Tensor> saved;
  if (forward.node_saves.empty()) {
    saved.assign(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(n_inputs));
  } else {
    for (int64_t i : forward.node_saves)
      saved.push_back(static_cast<size_t>(i) == out_slot ? out.detach() : slots.at(static_cast<size_t>(i)));
  }
  attach(out, inputs, saved, backward);
  return out;
}

// Note [native forward]: the eager conv op's forward as a Program too (kernels/causal_conv1d.py's
// _native_forward_program: y = empty_like(x) and the forward kernel's launch), run from one C++ call that also
// records the backward's node when `backward` is given: the Python forward's planning and launch (the launch
// description, Triton's launcher, the node's attach) cost ~15-25 us of host time a call, as much as its
// checks.  Planned and cached with the backward's Program, per configuration and shape, on the same conditions;
// the same kernel and arguments as launch_fwd, so the same bits (tests/tools/native_programs.py checks the launch
// parameter by parameter, the GPU tests the bits).  `saved`: the forward's slots and the tensors the node saves.
at::Tensor run_forward(const std::shared_ptr<Program>& forward, const std::vector<std::optional<at::Tensor>>& inputs,
                       const std::vector<at::Tensor>& saved, const std::shared_ptr<Program>& backward) {
  if (forward->n_saved >= 0 && static_cast<int64_t>(saved.size()) != forward->n_saved)
    throw std::invalid_argument(forward->name + ": run_forward was given " + std::to_string(saved.size()) +
                                " tensors, its Program's slots need " + std::to_string(forward->n_saved));
  std::vector<at::Tensor> slots(saved.begin(), saved.end());
  slots.reserve(saved.size() + forward->allocs.size());
  run_program(*forward, slots);
  return finish_forward(*forward, slots, saved.size(), inputs, backward);
}

// Note [eager attention from C++]: the eager attention op's calls without a mask (dropout or not, any layout the
// native backward takes) run from one C++ call once the Python path has made one call of the same form: that call
// plans the forward's Program beside the backward's (kernels/attention.py's native_forward_program, the launch
// launch_fwd_rows makes) and registers both here (ops/attention.py's _register_native), keyed by what decides
// them and what the Python checks read: q's, k's and v's sizes, strides and dtypes, their device, dropout_p,
// is_causal, the scale and the config switches the planning read.  A later call of that key is checked for what the
// key does not hold (exact Tensor / Parameter arguments, True / False flags, enable_gqa where the heads differ, no
// functorch transform or dispatch mode, q on the current device, 16-byte aligned pointers, no CUDA graph capture
// with dropout) and then draws its dropout seed (host_dropout_seed below: Note [host dropout seed], the hash the
// Python path computes), allocates O, LSE and the seed tensor, launches the forward kernel with the seed as an
// argument and records the node: what the Python path does in its ~30 us, without its checks, key building and
// launcher.  Anything else answers None and runs the Python path, which checks the call and (where it plans the
// Programs) registers it.
uint64_t dropout_seed_hash(uint64_t seed, uint64_t offset) {  // ops/attention.py's seed_hash: splitmix64
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + offset + 0x632BE59BD9B4E019ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return (1ULL << 61) | ((x ^ (x >> 31)) >> 3);
}

bool stream_capturing(const c10::Device& device) {
  using IsCapturing = int (*)(void*, int*);
  static auto is_capturing = reinterpret_cast<IsCapturing>(driver_symbol("cuStreamIsCapturing"));
  void* stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device).native_handle();
  int status = 0;
  return is_capturing(stream, &status) != 0 || status != 0;
}

// The eager kernels' dropout seed drawn on the host (Note [host dropout seed] in kernels/attention.py) from CUDA
// device `index`'s default generator, advanced by 4 under the generator's lock; -1 while the device's current stream
// is being captured into a CUDA graph (a seed fixed at capture would repeat at every replay).
int64_t host_dropout_seed(int64_t index) {
  c10::Device device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index));
  if (stream_capturing(device)) return -1;
  at::Generator gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  uint64_t offset = gen.get_offset();
  gen.set_offset(offset + 4);
  return static_cast<int64_t>(dropout_seed_hash(gen.current_seed(), offset));
}

// The Programs of a registered form (Note [eager attention from C++], Note [eager conv from C++]).
struct FormPrograms {
  std::shared_ptr<Program> forward, backward;  // backward: null for a form registered from a call without grad
};

// A registered form's key: the op (kAttentionForm / kConvForm), then what decides its Programs, as int64 words
// (doubles by their bits), the unused words zero.
constexpr int64_t kAttentionForm = 1, kConvForm = 2;
using FormKey = std::array<int64_t, 40>;

struct FormKeyHash {
  size_t operator()(const FormKey& k) const {
    size_t h = 0;
    for (int64_t w : k) h ^= std::hash<int64_t>()(w) + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    return h;
  }
};

int64_t double_bits(double x) {
  int64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// Registered forms of both ops (the GIL guards them: every caller holds it); past kMaxForms they start afresh, as the
// Python caches of Programs do.
constexpr size_t kMaxForms = 256;
std::unordered_map<FormKey, FormPrograms, FormKeyHash>& forms() {
  static std::unordered_map<FormKey, FormPrograms, FormKeyHash> registered;
  return registered;
}

void register_form(const FormKey& key, const std::shared_ptr<Program>& forward,
                   const std::shared_ptr<Program>& backward) {
  if (!forward || forward->outputs.empty()) throw std::invalid_argument("register: no forward Program");
  auto& registered = forms();
  if (registered.size() >= kMaxForms) registered.clear();
  registered[key] = FormPrograms{forward, backward};
}

// The Programs registered under `key`, or null.
const FormPrograms* find_form(const FormKey& key) {
  auto& registered = forms();
  auto it = registered.find(key);
  return it == registered.end() ? nullptr : &it->second;
}

// (tests) How many forms of `op` are registered; clear_forms forgets them.
size_t count_forms(int64_t op) {
  size_t n = 0;
  for (const auto& entry : forms()) n += entry.first[0] == op;
  return n;
}

void clear_forms(int64_t op) {
  auto& registered = forms();
  for (auto it = registered.begin(); it != registered.end();) it = it->first[0] == op ? registered.erase(it) : ++it;
}

FormKey attention_key(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout_p, bool causal,
                      double scale, int64_t switches) {
  FormKey key{};
  size_t i = 0;
  key[i++] = kAttentionForm;
  for (const at::Tensor* t : {&q, &k, &v}) {  // sizes, then strides
    for (int64_t d = 0; d < 4; ++d) key[i++] = t->size(d);
    for (int64_t d = 0; d < 4; ++d) key[i++] = t->stride(d);
    key[i++] = static_cast<int64_t>(t->scalar_type());
  }
  key[i++] = q.device().index();
  key[i++] = switches;
  key[i++] = double_bits(dropout_p);
  key[i++] = double_bits(scale);
  key[i++] = causal;
  return key;
}

// (ops/attention.py) Registers the Programs of a call the Python path checked and ran (Note [eager attention from
// C++]); backward None: a form seen without grad so far.
void register_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout_p, bool causal,
                        double scale, int64_t switches, const std::shared_ptr<Program>& forward,
                        const std::shared_ptr<Program>& backward) {
  register_form(attention_key(q, k, v, dropout_p, causal, scale, switches), forward, backward);
}

// The eager attention op's call without a mask run from C++ (Note [eager attention from C++]): O, or None.
pybind11::object eager_attention(pybind11::handle q_, pybind11::handle k_, pybind11::handle v_,
                                 pybind11::handle dropout_p_, pybind11::handle is_causal, pybind11::handle scale_,
                                 pybind11::handle enable_gqa, int64_t switches) {
  std::array<at::Tensor, 3> qkv;
  if (!plain_qkv(q_, k_, v_, is_causal, enable_gqa, qkv)) return pybind11::none();
  const auto& [q, k, v] = qkv;
  double dropout_p = 0.0;
  if (PyFloat_CheckExact(dropout_p_.ptr())) dropout_p = PyFloat_AS_DOUBLE(dropout_p_.ptr());
  else if (PyLong_CheckExact(dropout_p_.ptr())) dropout_p = static_cast<double>(PyLong_AsLong(dropout_p_.ptr()));
  else return pybind11::none();
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return pybind11::none();
  }
  if (!(dropout_p >= 0.0 && dropout_p < 1.0)) return pybind11::none();
  if (!q.is_cuda() || !on_current_device(q)) return pybind11::none();
  if (q.size(1) != k.size(1) && enable_gqa.ptr() != Py_True) return pybind11::none();
  double scale = positive_scale(scale_, q.size(3));
  if (scale == 0.0) return pybind11::none();
  const FormPrograms* programs =
      find_form(attention_key(q, k, v, dropout_p, is_causal.ptr() == Py_True, scale, switches));
  if (programs == nullptr) return pybind11::none();
  const bool grad =
      at::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  if (grad && !programs->backward) return pybind11::none();
  for (const at::Tensor* t : {&q, &k, &v})
    if (reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16) return pybind11::none();
  std::vector<int64_t> call;
  if (dropout_p > 0.0) {
    int64_t seed = host_dropout_seed(q.device().index());
    if (seed < 0) return pybind11::none();
    call.push_back(seed);
  }
  std::vector<at::Tensor> slots{q, k, v};
  slots.reserve(3 + programs->forward->allocs.size());
  run_program(*programs->forward, slots, call);
  return pybind11::cast(finish_forward(*programs->forward, slots, 3, {q, k, v}, grad ? programs->backward : nullptr));
}

// Note [eager conv from C++]: the eager conv op's calls, as Note [eager attention from C++] does for the
// attention's: a form the Python path has checked and run natively (ops/causal_conv1d.py's _native_causal_conv1d)
// registers its forward and backward Programs (Note [native forward]), keyed by its tensors' sizes, strides and
// dtypes (x, a 2-d weight, and bias, seq_idx and initial_states or their absence), the activation, config's
// deterministic and the device; a later call of the form, checked for what the key does not hold (exact Tensor /
// Parameter arguments, no functorch transform or dispatch mode, x on the current device, 16-byte aligned pointers),
// runs from this one call; anything else answers None and takes the Python path.
FormKey conv_key(const std::array<const at::Tensor*, 5>& tensors, bool silu, bool deterministic) {
  FormKey key{};
  size_t i = 0;
  key[i++] = kConvForm;
  for (const at::Tensor* t : tensors) {  // x, weight, bias, seq_idx, initial_states: sizes, strides, dtype
    std::fill(key.begin() + i, key.begin() + i + 7, -1);  // -1: absent
    if (t != nullptr) {
      for (int64_t d = 0; d < t->dim() && d < 3; ++d) {
        key[i + d] = t->size(d);
        key[i + 3 + d] = t->stride(d);
      }
      key[i + 6] = static_cast<int64_t>(t->scalar_type());
    }
    i += 7;
  }
  key[i++] = tensors[0]->device().index();
  key[i++] = silu;
  key[i++] = deterministic;
  return key;
}

std::array<const at::Tensor*, 5> conv_tensors(const at::Tensor& x, const at::Tensor& w,
                                              const std::optional<at::Tensor>& b,
                                              const std::optional<at::Tensor>& seq_idx,
                                              const std::optional<at::Tensor>& init) {
  return {&x, &w, b ? &*b : nullptr, seq_idx ? &*seq_idx : nullptr, init ? &*init : nullptr};
}

// (ops/causal_conv1d.py) Registers a checked call's Programs (Note [eager conv from C++]); backward None: a form
// seen without grad so far.
void register_conv(const at::Tensor& x, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                   const std::optional<at::Tensor>& seq_idx, const std::optional<at::Tensor>& init, bool silu,
                   bool deterministic, const std::shared_ptr<Program>& forward,
                   const std::shared_ptr<Program>& backward) {
  if (x.dim() != 3 || weight.dim() != 2) throw std::invalid_argument("register_conv: x 3-d and weight 2-d");
  register_form(conv_key(conv_tensors(x, weight, bias, seq_idx, init), silu, deterministic), forward, backward);
}

// An optional tensor argument: None, or an exact Tensor / Parameter; false for anything else.
bool optional_tensor(pybind11::handle h, std::optional<at::Tensor>& out) {
  if (h.is_none()) return true;
  if (!THPVariable_CheckExact(h.ptr())) return false;
  out = THPVariable_Unpack(h.ptr());
  return true;
}

// The eager conv op's call run from C++ (Note [eager conv from C++]): y, or None.
pybind11::object eager_causal_conv1d(pybind11::handle x_, pybind11::handle w_, pybind11::handle b_,
                                     pybind11::handle seq_, pybind11::handle init_, pybind11::handle activation,
                                     bool deterministic) {
  if (!THPVariable_CheckExact(x_.ptr()) || !THPVariable_CheckExact(w_.ptr())) return pybind11::none();
  std::optional<at::Tensor> b, seq_idx, init;
  if (!optional_tensor(b_, b) || !optional_tensor(seq_, seq_idx) || !optional_tensor(init_, init))
    return pybind11::none();
  bool silu = false;
  if (!activation.is_none()) {
    if (!PyUnicode_CheckExact(activation.ptr())) return pybind11::none();
    if (PyUnicode_CompareWithASCIIString(activation.ptr(), "silu") == 0 ||
        PyUnicode_CompareWithASCIIString(activation.ptr(), "swish") == 0)
      silu = true;
    else
      return pybind11::none();
  }
  if (transformed()) return pybind11::none();
  const at::Tensor& x = THPVariable_Unpack(x_.ptr());
  const at::Tensor& w = THPVariable_Unpack(w_.ptr());
  if (x.dim() != 3 || w.dim() != 2 || !x.is_cuda()) return pybind11::none();
  if (!on_current_device(x)) return pybind11::none();
  auto tensors = conv_tensors(x, w, b, seq_idx, init);
  for (const at::Tensor* t : tensors) {
    if (t == nullptr) continue;
    if (t->dim() > 3 || t->device() != x.device() || reinterpret_cast<std::uintptr_t>(t->data_ptr()) % 16)
      return pybind11::none();
  }
  const FormPrograms* programs = find_form(conv_key(tensors, silu, deterministic));
  if (programs == nullptr) return pybind11::none();
  const bool grad = at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad() ||
                                                   (b && b->requires_grad()) || (init && init->requires_grad()));
  if (grad && !programs->backward) return pybind11::none();
  std::vector<at::Tensor> slots;
  slots.reserve(5 + programs->forward->allocs.size());
  for (const at::Tensor* t : tensors)
    if (t != nullptr) slots.push_back(*t);
  const size_t n_inputs = slots.size();
  run_program(*programs->forward, slots);
  return pybind11::cast(finish_forward(*programs->forward, slots, n_inputs, {x, w, b, init},
                                       grad ? programs->backward : nullptr));
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  pybind11::class_<Program, std::shared_ptr<Program>>(m, "Program")
      .def(pybind11::init<>())
      .def_readwrite("name", &Program::name)
      .def_readwrite("dy_like", &Program::dy_like)
      .def_readwrite("n_saved", &Program::n_saved)
      .def_readwrite("outputs", &Program::outputs)
      .def_readwrite("node_saves", &Program::node_saves)
      .def("add_alloc", &Program::add_alloc)
      .def("add_launch", &Program::add_launch)
      // (tests) the allocations as (like, shape, dtype name, zero) and the launches as (function, grid, threads,
      // shared, kinds, values)
      .def("allocs", [](const Program& p) {
        pybind11::list out;
        for (const auto& a : p.allocs)
          out.append(pybind11::make_tuple(a.like, a.shape, std::string(c10::toString(a.dtype)), a.zero));
        return out;
      })
      .def("launches", [](const Program& p) {
        pybind11::list out;
        for (const auto& l : p.launches)
          out.append(pybind11::make_tuple(l.function, std::vector<unsigned>(l.grid, l.grid + 3), l.threads, l.shared,
                                          l.kinds, l.values));
        return out;
      });
  m.def("attach", &attach, "record out as the output of a node whose backward runs a Program");
  m.def("run_forward", &run_forward, "run a forward Program and, given a backward Program, record its node",
        pybind11::arg("forward"), pybind11::arg("inputs"), pybind11::arg("saved"),
        pybind11::arg("backward").none(true));
  m.def("attach_cudnn", &attach_cudnn, "record out as the output of a node whose backward is cuDNN's attention's");
  m.def("cudnn_attention", &cudnn_attention, "cuDNN's attention forward, with a CudnnAttentionBackward when grad");
  m.def("eager_cudnn_attention", &eager_cudnn_attention,
        "the eager op's cuDNN route decided and run (Note [cuDNN route from C++]): O, or None where it does not apply");
  // (tests) the route's verdict without its device conditions: the scale it would run with, 0 where it refuses
  m.def("cudnn_route_scale", [](pybind11::handle q, pybind11::handle k, pybind11::handle v, pybind11::handle causal,
                                pybind11::handle scale, pybind11::handle gqa, int64_t min_work) {
    return cudnn_route_scale(q, k, v, causal, scale, gqa, min_work, false);
  });
  m.attr("MAX_DECODE_QUERIES") = kMaxDecodeQueries;
  m.def("register_attention", &register_attention,
        "register a checked call's Programs (Note [eager attention from C++])",
        pybind11::arg("q"), pybind11::arg("k"), pybind11::arg("v"), pybind11::arg("dropout_p"), pybind11::arg("causal"),
        pybind11::arg("scale"), pybind11::arg("switches"), pybind11::arg("forward"),
        pybind11::arg("backward").none(true));
  m.def("eager_attention", &eager_attention, "a registered form of the eager attention run from C++, or None");
  m.def("host_dropout_seed", &host_dropout_seed, "the eager kernels' dropout seed drawn on the host, -1 in capture");
  m.def("dropout_seed_hash", [](uint64_t seed, uint64_t offset) { return dropout_seed_hash(seed, offset); });
  m.def("attention_forms", []() { return count_forms(kAttentionForm); });
  m.def("register_conv", &register_conv, "register a checked conv call's Programs (Note [eager conv from C++])",
        pybind11::arg("x"), pybind11::arg("weight"), pybind11::arg("bias").none(true),
        pybind11::arg("seq_idx").none(true), pybind11::arg("initial_states").none(true), pybind11::arg("silu"),
        pybind11::arg("deterministic"), pybind11::arg("forward"), pybind11::arg("backward").none(true));
  m.def("eager_causal_conv1d", &eager_causal_conv1d, "a registered form of the eager conv run from C++, or None");
  m.def("conv_forms", []() { return count_forms(kConvForm); });
  m.def("clear_conv_forms", []() { clear_forms(kConvForm); });
  m.def("clear_attention_forms", []() { clear_forms(kAttentionForm); });
}
