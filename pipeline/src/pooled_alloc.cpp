// pooled_allocate / pooled_deallocate (see detail/pooled_alloc.hpp): one NodeCache per size
// class, reached through a jump on the class.
#include <trellis/pipeline/detail/pooled_alloc.hpp>

#include <utility>

#include <trellis/pipeline/detail/node_cache.hpp>

namespace trellis::detail {

namespace {

template <class Indexes>
struct Classes;
template <std::size_t... I>
struct Classes<std::index_sequence<I...>> {
  // Class I + 1 is served by NodeCache<pooled_class_size(I + 1)>.
  static void* allocate(std::size_t cls) {
    static constexpr void* (*kAllocate[])() = {&NodeCache<pooled_class_size(I + 1)>::allocate...};
    return kAllocate[cls - 1]();
  }
  static void deallocate(void* p, std::size_t cls) noexcept {
    static constexpr void (*kDeallocate[])(void*) noexcept = {
        &NodeCache<pooled_class_size(I + 1)>::deallocate...};
    kDeallocate[cls - 1](p);
  }
};
using SizeClasses = Classes<std::make_index_sequence<kPooledClasses>>;

}  // namespace

void* pooled_allocate(std::size_t n) {
  const std::size_t cls = pooled_class(n);
  if (cls == 0) return ::operator new(n);
  return SizeClasses::allocate(cls);
}

void pooled_deallocate(void* p, std::size_t n) noexcept {
  const std::size_t cls = pooled_class(n);
  if (cls == 0) {
    ::operator delete(p);
    return;
  }
  SizeClasses::deallocate(p, cls);
}

}  // namespace trellis::detail
