// InlinePimpl: an object of a type that the header only declares, kept inside its owner rather
// than on the heap. A channel holds its Asio reactor state this way: the public header does not
// need Asio, and a connection costs no allocation more than the channel itself. Only the source
// files that see T complete may construct, destroy or reach it (the member functions are
// templates and instantiate there); each checks at compile time that T fits.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace trellis::detail {

template <class T, std::size_t Size, std::size_t Align = alignof(std::max_align_t)>
class InlinePimpl {
 public:
  template <class... Args>
  explicit InlinePimpl(Args&&... args) {
    static_assert(sizeof(T) <= Size, "InlinePimpl: raise Size to sizeof(T)");
    static_assert(Align % alignof(T) == 0, "InlinePimpl: raise Align to alignof(T)");
    ::new (static_cast<void*>(bytes_)) T(std::forward<Args>(args)...);
  }
  ~InlinePimpl() { get().~T(); }
  InlinePimpl(const InlinePimpl&) = delete;
  InlinePimpl& operator=(const InlinePimpl&) = delete;

  T& get() noexcept { return *std::launder(reinterpret_cast<T*>(bytes_)); }
  const T& get() const noexcept { return *std::launder(reinterpret_cast<const T*>(bytes_)); }
  T* operator->() noexcept { return &get(); }
  const T* operator->() const noexcept { return &get(); }

 private:
  alignas(Align) std::byte bytes_[Size];
};

}  // namespace trellis::detail
