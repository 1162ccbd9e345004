// UniqueFunction<R(Args...)>: a move-only type-erased callable with small-buffer storage, so the
// task queues of executors hold lambdas (including move-only captures) without heap allocation.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/detail/pooled_alloc.hpp>

namespace trellis {

/// A move-only callable; see UniqueFunction<R(Args...)>.
template <class Signature>
class UniqueFunction;

/// A move-only type-erased callable `R(Args...)` with small-buffer storage: callables up to
/// kInlineSize bytes (move constructible without throwing) are stored inline, larger ones in a
/// block of the thread's node cache (detail::pooled_allocate; the heap past 4 KiB or for
/// over-aligned callables). Not thread-safe: one owner at a time.
template <class R, class... Args>
class UniqueFunction<R(Args...)> {
 public:
  /// Callables up to this size (and alignment of `std::max_align_t`) are stored inline.
  static constexpr std::size_t kInlineSize = 48;

  /// An empty function.
  UniqueFunction() noexcept = default;
  /// An empty function.
  UniqueFunction(std::nullptr_t) noexcept {}

  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, UniqueFunction> &&
                                     std::is_invocable_r_v<R, D&, Args...>>>
  /// Holds `f` (moved or copied in); callables convert implicitly.
  UniqueFunction(F&& f) {  // NOLINT(google-explicit-constructor): callables convert implicitly
    if constexpr (fits_inline<D>()) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &inline_ops<D>;
    } else if constexpr (alignof(D) <= alignof(std::max_align_t)) {
      void* block = detail::pooled_allocate(sizeof(D));
      try {
        *reinterpret_cast<D**>(storage_) = ::new (block) D(std::forward<F>(f));
      } catch (...) {
        detail::pooled_deallocate(block, sizeof(D));
        throw;
      }
      ops_ = &pooled_ops<D>;
    } else {
      *reinterpret_cast<D**>(storage_) = new D(std::forward<F>(f));
      ops_ = &heap_ops<D>;
    }
  }

  /// Takes `other`'s callable; `other` becomes empty.
  UniqueFunction(UniqueFunction&& other) noexcept : ops_(other.ops_) {
    if (ops_) {
      ops_->move(other.storage_, storage_);
      other.ops_ = nullptr;
    }
  }

  /// Destroys the held callable and takes `other`'s; `other` becomes empty.
  UniqueFunction& operator=(UniqueFunction&& other) noexcept {
    if (this != &other) {
      reset();
      if (other.ops_) {
        ops_ = other.ops_;
        ops_->move(other.storage_, storage_);
        other.ops_ = nullptr;
      }
    }
    return *this;
  }

  UniqueFunction(const UniqueFunction&) = delete;
  UniqueFunction& operator=(const UniqueFunction&) = delete;

  ~UniqueFunction() { reset(); }

  /// Destroys the held callable; the function becomes empty.
  void reset() noexcept {
    if (ops_) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

  /// True when a callable is held.
  explicit operator bool() const noexcept { return ops_ != nullptr; }

  /// Calls the held callable (which must be there).
  R operator()(Args... args) { return ops_->invoke(storage_, std::forward<Args>(args)...); }

 private:
  struct Ops {
    R (*invoke)(void*, Args&&...);
    void (*move)(void* from, void* to) noexcept;
    void (*destroy)(void*) noexcept;
  };

  template <class D>
  static constexpr bool fits_inline() {
    return sizeof(D) <= kInlineSize && alignof(D) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<D>;
  }

  template <class D>
  static constexpr Ops inline_ops = {
      [](void* s, Args&&... args) -> R {
        return std::invoke(*std::launder(static_cast<D*>(s)), std::forward<Args>(args)...);
      },
      [](void* from, void* to) noexcept {
        D* src = std::launder(static_cast<D*>(from));
        ::new (to) D(std::move(*src));
        src->~D();
      },
      [](void* s) noexcept { std::launder(static_cast<D*>(s))->~D(); },
  };

  template <class D>
  static constexpr Ops heap_ops = {
      [](void* s, Args&&... args) -> R {
        return std::invoke(**static_cast<D**>(s), std::forward<Args>(args)...);
      },
      [](void* from, void* to) noexcept { *static_cast<D**>(to) = *static_cast<D**>(from); },
      [](void* s) noexcept { delete *static_cast<D**>(s); },
  };

  template <class D>
  static constexpr Ops pooled_ops = {
      heap_ops<D>.invoke,
      heap_ops<D>.move,
      [](void* s) noexcept {
        D* d = *static_cast<D**>(s);
        d->~D();
        detail::pooled_deallocate(d, sizeof(D));
      },
  };

  alignas(std::max_align_t) unsigned char storage_[kInlineSize];
  const Ops* ops_ = nullptr;
};

}  // namespace trellis
