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
#include <torch/csrc/autograd/saved_variable.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "node_compat.h"

#include <cstdint>
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

// One kernel argument: a tensor slot's data pointer, an int32 / int64 / fp32 value, or a null pointer.
enum ArgKind : int64_t { kSlot = 0, kI32 = 1, kI64 = 2, kF32 = 3, kNull = 4 };

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
struct Program {
  std::string name;
  int64_t dy_like = 0;
  int64_t n_saved = -1;
  std::vector<Alloc> allocs;
  std::vector<Launch> launches;
  std::vector<int64_t> outputs;

  void add_alloc(int64_t like, std::vector<int64_t> shape, const std::string& dtype, bool zero) {
    c10::ScalarType t;
    if (dtype == "float32") t = c10::ScalarType::Float;
    else if (dtype == "bfloat16") t = c10::ScalarType::BFloat16;
    else if (dtype == "float16") t = c10::ScalarType::Half;
    else if (dtype == "int32") t = c10::ScalarType::Int;
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
    for (const auto& a : program->allocs) {
      if (a.like >= 0) {
        slots.push_back(a.zero ? at::zeros_like(slots.at(a.like)) : at::empty_like(slots.at(a.like)));
      } else {
        auto options = at::TensorOptions().dtype(a.dtype).device(slots.at(0).device());
        slots.push_back(a.zero ? at::zeros(a.shape, options) : at::empty(a.shape, options));
      }
    }
    const c10::Device device = slots.at(0).device();
    void* stream = nullptr;
    LaunchFn launch = nullptr;
    if (!program->launches.empty()) {
      stream = c10::impl::getDeviceGuardImpl(device.type())->getStream(device).native_handle();
      launch = driver_launch();
      ensure_context(device.index());
    }
    std::vector<ArgValue> storage;
    std::vector<void*> params;
    for (const auto& l : program->launches) {
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
          default: storage[i].ptr = 0;
        }
        params[i] = &storage[i];
      }
      int err = launch(reinterpret_cast<void*>(l.function), l.grid[0], l.grid[1], l.grid[2], l.threads, 1, 1,
                       l.shared, stream, params.data(), nullptr);
      if (err != 0)
        throw std::runtime_error(program->name + ": cuLaunchKernel failed with CUresult " + std::to_string(err));
    }
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

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  pybind11::class_<Program, std::shared_ptr<Program>>(m, "Program")
      .def(pybind11::init<>())
      .def_readwrite("name", &Program::name)
      .def_readwrite("dy_like", &Program::dy_like)
      .def_readwrite("n_saved", &Program::n_saved)
      .def_readwrite("outputs", &Program::outputs)
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
  m.def("attach_cudnn", &attach_cudnn, "record out as the output of a node whose backward is cuDNN's attention's");
  m.def("cudnn_attention", &cudnn_attention, "cuDNN's attention forward, with a CudnnAttentionBackward when grad");
}
