// Message: the move-only, type-erased box that travels through a pipeline. Small values (a
// ByteBuf, a small struct) live inline, so passing a message from handler to handler allocates
// nothing; bigger ones (an HTTP request head) live in a heap box of up to 512 bytes that is
// recycled through a per-thread cache, so a steady stream of them allocates nothing either. The
// type tag is a per-type table address, so no RTTI is involved.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <trellis/pipeline/byte_buf.hpp>
#include <trellis/pipeline/detail/node_cache.hpp>
#include <trellis/pipeline/error.hpp>

namespace trellis {

class Message;

/// Types whose bytes may be moved with memcpy (and the source forgotten) instead of a move
/// constructor plus destructor. Specialise it for your own handle types to make Message moves a
/// plain copy of the inline storage.
template <class T>
struct is_trivially_relocatable : std::is_trivially_copyable<T> {};
/// A ByteBuf is a pointer and indexes: nothing in it points into the handle itself.
template <>
struct is_trivially_relocatable<ByteBuf> : std::true_type {};

/// Types Message::clone() copies: copy-constructible ones, and for a container (a type with a
/// `value_type`) only when its elements are copyable too: `std::vector<std::unique_ptr<T>>`
/// claims a copy constructor that does not compile. Specialise it as false for your own such
/// types.
template <class T, class = void>
struct is_copyable_message : std::is_copy_constructible<T> {};
/// A container is a copyable message when it and its elements are copy-constructible.
template <class T>
struct is_copyable_message<T, std::void_t<typename T::value_type>>
    : std::conjunction<std::is_copy_constructible<T>,
                       std::disjunction<std::is_same<typename T::value_type, T>,
                                        is_copyable_message<typename T::value_type>>> {};

namespace detail {

// The readable name of T from the compiler's signature of this function (no RTTI needed).
template <class T>
constexpr std::string_view type_name() noexcept {
  std::string_view sig = __PRETTY_FUNCTION__;
#if defined(__clang__)
  constexpr std::string_view kStart = "T = ";
  const auto end = sig.rfind(']');
#else
  constexpr std::string_view kStart = "with T = ";
  auto end = sig.find(';', sig.find(kStart));
  if (end == std::string_view::npos) end = sig.rfind(']');
#endif
  const auto start = sig.find(kStart);
  if (start == std::string_view::npos || end == std::string_view::npos) return "?";
  return sig.substr(start + kStart.size(), end - start - kStart.size());
}

struct MessageOps {
  std::string_view name;
  // nullptr: the storage is relocated with memcpy.
  void (*relocate)(void* from, void* to) noexcept;
  // nullptr: nothing to destroy.
  void (*destroy)(void* storage) noexcept;
  // Copies the value in `from` into the empty message `to`; nullptr: the type is not copyable.
  void (*copy)(const Message& from, Message& to);
};

[[noreturn]] void throw_wrong_message_type(std::string_view held, std::string_view wanted);
[[noreturn]] void throw_not_copyable_message(std::string_view held);

// The recycled block size for a boxed value of this size, or 0 when it is too big (or too
// aligned) for the per-thread box caches and goes to the heap directly.
template <class T>
constexpr std::size_t message_box_size() noexcept {
  if (alignof(T) > alignof(std::max_align_t)) return 0;
  for (std::size_t size : {64, 128, 256, 512}) {
    if (sizeof(T) <= size) return size;
  }
  return 0;
}

// String literals become std::string: a message holding a pointer to a literal is never wanted.
template <class T, class R = std::remove_cvref_t<T>>
using message_value_t =
    std::conditional_t<std::is_array_v<R> && std::is_same_v<std::remove_extent_t<R>, char>,
                       std::string, std::decay_t<T>>;

}  // namespace detail

/// The move-only, type-erased box that travels through a pipeline (the `msg` of `channel_read`
/// and `write`). Small values (a ByteBuf, a small struct) live inline, so passing a message from
/// handler to handler allocates nothing; bigger ones live in a heap box recycled through a
/// per-thread cache. String literals are stored as `std::string`. No RTTI is involved.
///
/// Threading: a message is used by one thread at a time; it may be moved to another thread.
///
/// Errors: get() and take() of another type than the held one, and clone() of a value that is
/// not copyable, throw WrongTypeError naming the types.
class Message {
 public:
  /// Values up to this size (and alignment of `std::max_align_t`) that move without throwing are
  /// stored inline; bigger ones take one heap allocation.
  static constexpr std::size_t kInlineSize = 48;

  /// Whether a `T` is stored inside the message (no allocation).
  template <class T>
  static constexpr bool stored_inline() noexcept {
    return sizeof(T) <= kInlineSize && alignof(T) <= alignof(std::max_align_t) &&
           (is_trivially_relocatable<T>::value || std::is_nothrow_move_constructible_v<T>);
  }

  /// An empty message.
  Message() noexcept = default;

  /// Implicit from any move-constructible value, so `ctx.fire_channel_read(std::move(buf))`
  /// works.
  template <class T, class D = detail::message_value_t<T>>
  requires(!std::is_same_v<std::remove_cvref_t<T>, Message> && std::is_constructible_v<D, T&&>)
      Message(T&& value) {  // NOLINT(google-explicit-constructor)
    construct<D>(std::forward<T>(value));
  }

  /// Takes the other message's value; `other` becomes empty.
  Message(Message&& other) noexcept : ops_(other.ops_) { relocate_from(other); }
  /// Destroys this message's value, then takes the other's; `other` becomes empty.
  Message& operator=(Message&& other) noexcept {
    if (this != &other) {
      reset();
      ops_ = other.ops_;
      relocate_from(other);
    }
    return *this;
  }
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  /// Destroys the value.
  ~Message() { reset(); }

  /// A message holding a `T` built in place from `args`.
  template <class T, class... Args>
  static Message make(Args&&... args) {
    Message m;
    m.construct<T>(std::forward<Args>(args)...);
    return m;
  }
  /// Destroys the value, then builds a `T` in place from `args`; returns it.
  template <class T, class... Args>
  T& emplace(Args&&... args) {
    reset();
    construct<T>(std::forward<Args>(args)...);
    return *ptr<T>();
  }

  /// A `T` default-initialised in place, as `std::make_unique_for_overwrite` does: members without
  /// a default member initialiser are indeterminate instead of zeroed. For large messages filled
  /// right after (value-initialising an HTTP request first zeroes its ~280 bytes).
  template <class T>
  T& emplace_for_overwrite() {
    reset();
    construct<T, true>();
    return *ptr<T>();
  }

  /// True when the message holds nothing.
  bool empty() const noexcept { return ops_ == nullptr; }
  /// True when the message holds a value.
  explicit operator bool() const noexcept { return ops_ != nullptr; }

  /// True when the message holds a `T` (exactly that type, not a base or a derived one).
  template <class T>
  bool is() const noexcept {
    return ops_ == &kOps<std::remove_cvref_t<T>>;
  }
  /// @name Access to the value
  ///@{

  /// The value, or nullptr when the message holds another type (or nothing).
  template <class T>
  T* try_get() noexcept {
    return is<T>() ? ptr<std::remove_cvref_t<T>>() : nullptr;
  }
  template <class T>
  const T* try_get() const noexcept {
    return const_cast<Message*>(this)->try_get<T>();
  }
  ///@}

  /// @name Access to the value, checked
  ///@{

  /// The value; throws WrongTypeError naming both types when the message holds another type.
  template <class T>
  T& get() {
    if (!is<T>()) detail::throw_wrong_message_type(type_name(), detail::type_name<T>());
    return *ptr<std::remove_cvref_t<T>>();
  }
  template <class T>
  const T& get() const {
    return const_cast<Message*>(this)->get<T>();
  }
  ///@}

  /// Moves the value out and leaves the message empty; throws WrongTypeError like get().
  template <class T>
  T take() {
    T value(std::move(get<T>()));
    reset();
    return value;
  }

  /// Whether clone() can copy what this message holds: a copy-constructible value, or nothing.
  bool is_copyable() const noexcept { return ops_ == nullptr || ops_->copy != nullptr; }
  /// A new message holding a copy of the value (empty for an empty message); throws
  /// WrongTypeError naming the type when it is not copy-constructible (a ByteBuf: share() or
  /// slice() its bytes instead).
  Message clone() const {
    Message out;
    if (ops_ == nullptr) return out;
    if (ops_->copy == nullptr) detail::throw_not_copyable_message(type_name());
    ops_->copy(*this, out);
    return out;
  }

  /// The held type's name ("empty" for an empty message), for errors and logs.
  std::string_view type_name() const noexcept { return ops_ ? ops_->name : "empty"; }

  /// Destroys the value (the message becomes empty).
  void reset() noexcept {
    if (ops_ != nullptr) {
      if (ops_->destroy != nullptr) ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

  /// The name Message::type_name() reports for a T.
  template <class T>
  static constexpr std::string_view name_of() noexcept {
    return detail::type_name<T>();
  }

 private:
  template <class T>
  T* ptr() noexcept {
    if constexpr (stored_inline<T>()) {
      return std::launder(reinterpret_cast<T*>(storage_));
    } else {
      return *reinterpret_cast<T**>(storage_);
    }
  }

  template <class T, bool kForOverwrite = false, class... Args>
  void construct(Args&&... args) {
    static_assert(!std::is_reference_v<T> && !std::is_same_v<T, Message>);
    static_assert(!kForOverwrite || sizeof...(Args) == 0);
    // new T(args...), or new T without parentheses (default-initialisation) for overwrite.
    auto make_at = [&](void* at) -> T* {
      if constexpr (kForOverwrite) {
        return ::new (at) T;
      } else {
        return ::new (at) T(std::forward<Args>(args)...);
      }
    };
    if constexpr (stored_inline<T>()) {
      make_at(storage_);
    } else if constexpr (constexpr auto kBox = detail::message_box_size<T>(); kBox != 0) {
      void* box = detail::NodeCache<kBox>::allocate();
      try {
        *reinterpret_cast<T**>(storage_) = make_at(box);
      } catch (...) {
        detail::NodeCache<kBox>::deallocate(box);
        throw;
      }
    } else {
      if constexpr (kForOverwrite) {
        *reinterpret_cast<T**>(storage_) = new T;
      } else {
        *reinterpret_cast<T**>(storage_) = new T(std::forward<Args>(args)...);
      }
    }
    ops_ = &kOps<T>;
  }

  void relocate_from(Message& other) noexcept {
    if (ops_ != nullptr && ops_->relocate != nullptr) {
      ops_->relocate(other.storage_, storage_);
    } else {
      std::memcpy(storage_, other.storage_, kInlineSize);
    }
    other.ops_ = nullptr;
  }

  template <class T>
  static constexpr detail::MessageOps make_ops() noexcept {
    detail::MessageOps ops{detail::type_name<T>(), nullptr, nullptr, nullptr};
    if constexpr (is_copyable_message<T>::value) {
      ops.copy = [](const Message& from, Message& to) {
        to.construct<T>(*const_cast<Message&>(from).ptr<T>());
      };
    }
    if constexpr (stored_inline<T>()) {
      if constexpr (!is_trivially_relocatable<T>::value) {
        ops.relocate = [](void* from, void* to) noexcept {
          T* src = std::launder(static_cast<T*>(from));
          ::new (to) T(std::move(*src));
          src->~T();
        };
      }
      if constexpr (!std::is_trivially_destructible_v<T>) {
        ops.destroy = [](void* s) noexcept { std::launder(static_cast<T*>(s))->~T(); };
      }
    } else if constexpr (constexpr auto kBox = detail::message_box_size<T>(); kBox != 0) {
      ops.destroy = [](void* s) noexcept {
        T* value = *static_cast<T**>(s);
        value->~T();
        detail::NodeCache<kBox>::deallocate(value);
      };
    } else {
      ops.destroy = [](void* s) noexcept { delete *static_cast<T**>(s); };
    }
    return ops;
  }

  template <class T>
  static constexpr detail::MessageOps kOps = make_ops<T>();

  alignas(std::max_align_t) unsigned char storage_[kInlineSize];
  const detail::MessageOps* ops_ = nullptr;
};

static_assert(Message::stored_inline<ByteBuf>(), "a ByteBuf must travel without allocating");

}  // namespace trellis
