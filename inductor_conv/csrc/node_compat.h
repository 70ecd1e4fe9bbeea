// What the C++ autograd nodes of inductor_conv share across torch versions (included by
// inductor_conv/csrc/backward_node.cpp and benchmarks/diagnostics/backward_node.cpp).
#pragma once
#include <torch/csrc/autograd/function.h>

#include <memory>

namespace inductor_conv {

using NodePtr = decltype(torch::autograd::Edge().function);

// A new node of type T as the pointer type Edge holds: torch 2.11's nodes are std::shared_ptr, later ones
// c10::intrusive_ptr (pytorch#181782).
template <class T, class P = NodePtr>
struct MakeNode {
  static P make() { return c10::make_intrusive<T>(); }
};
template <class T>
struct MakeNode<T, std::shared_ptr<torch::autograd::Node>> {
  static std::shared_ptr<torch::autograd::Node> make() { return std::make_shared<T>(); }
};

}  // namespace inductor_conv
