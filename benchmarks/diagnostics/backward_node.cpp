// A C++ autograd node whose backward calls a Python function, for benchmarks/diagnostics/cpp_node_host.py: the eager
// ops' autograd without a Python torch.autograd.Function, to measure what that Function costs.
#include <torch/extension.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>

#include "node_compat.h"  // inductor_conv/csrc, on the include path (cpp_node_host.py)

namespace {

using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

using inductor_conv::MakeNode;
using inductor_conv::NodePtr;

struct PyBackward final : public Node {
  // backward(grad_out, saved...) -> tuple of one gradient (or None) per input
  PyObject* fn = nullptr;
  std::vector<SavedVariable> saved;
  size_t num_inputs = 0;

  std::string name() const override { return "InductorConvBackward"; }

  variable_list apply(variable_list&& grads) override {
    if (!grads[0].defined()) return variable_list(num_inputs);  // no gradient flows into the output
    std::vector<at::Tensor> unpacked;
    unpacked.reserve(saved.size());
    for (auto& s : saved) unpacked.push_back(s.unpack());
    variable_list result(num_inputs);
    pybind11::gil_scoped_acquire gil;
    if (fn == nullptr) throw std::runtime_error("inductor_conv: backward called after its saved tensors were freed");
    pybind11::tuple args(1 + unpacked.size());
    args[0] = pybind11::cast(grads[0]);
    for (size_t i = 0; i < unpacked.size(); ++i)
      args[i + 1] = unpacked[i].defined() ? pybind11::cast(unpacked[i]) : pybind11::none();
    pybind11::object out = pybind11::reinterpret_borrow<pybind11::function>(fn)(*args);
    auto tup = out.cast<pybind11::tuple>();
    for (size_t i = 0; i < num_inputs && i < tup.size(); ++i)
      if (!tup[i].is_none() && should_compute_output(i)) result[i] = tup[i].cast<at::Tensor>();
    return result;
  }

  void release_variables() override {
    saved.clear();
    drop_fn();
  }

  void drop_fn() {
    if (fn != nullptr) {
      pybind11::gil_scoped_acquire gil;
      Py_CLEAR(fn);
    }
  }

  ~PyBackward() override { drop_fn(); }
};

// Records `out` as the result of a node with `inputs` as its differentiable inputs; the node's backward calls
// `fn(grad_out, *saved, out)` (out is saved as the node's output, without a reference cycle).
void attach(const at::Tensor& out, const std::vector<std::optional<at::Tensor>>& inputs,
            const std::vector<std::optional<at::Tensor>>& saved, pybind11::function fn) {
  std::vector<at::Tensor> ins;
  ins.reserve(inputs.size());
  for (auto& t : inputs) ins.push_back(t.has_value() ? *t : at::Tensor());
  NodePtr ptr = MakeNode<PyBackward, NodePtr>::make();
  auto* node = static_cast<PyBackward*>(ptr.get());
  node->num_inputs = ins.size();
  node->set_next_edges(torch::autograd::collect_next_edges(ins));
  node->saved.reserve(saved.size() + 1);
  for (auto& t : saved) node->saved.emplace_back(t.has_value() ? *t : at::Tensor(), false);
  node->fn = fn.release().ptr();
  // out is saved through a detached alias (same storage and version counter, no grad_fn): no reference cycle
  node->saved.emplace_back(out.detach(), false);
  torch::autograd::set_history(out, ptr);
}

struct IdentityBackward final : public Node {
  variable_list apply(variable_list&& grads) override { return std::move(grads); }
};

// (diagnostic) out gets a C++ node passing its gradient to x unchanged: autograd's floor without Python.
void attach_identity(const at::Tensor& out, const at::Tensor& x) {
  NodePtr ptr = MakeNode<IdentityBackward, NodePtr>::make();
  ptr->set_next_edges(torch::autograd::collect_next_edges(x));
  torch::autograd::set_history(out, ptr);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("attach_identity", &attach_identity, "out's gradient goes to x unchanged (diagnostic)");
  m.def("attach", &attach, "record out as the output of a C++ autograd node calling a Python backward");
}
