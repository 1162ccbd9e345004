// Typed attributes attached to a channel (Netty's AttributeKey/AttributeMap): a key carries the
// value type, so reading an attribute needs no cast and a mismatch cannot compile.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <trellis/pipeline/message.hpp>

namespace trellis {

namespace detail {
std::uint32_t next_attribute_key_id() noexcept;
}

/// The key of a channel attribute holding a `T`. Keys are usually static constants:
/// `static const AttributeKey<Session> kSession{"session"};`. Two keys with the same name are two
/// different keys.
template <class T>
class AttributeKey {
 public:
  /// A new key, distinct from every other; `name` is for diagnostics.
  explicit AttributeKey(std::string name)
      : name_(std::move(name)), id_(detail::next_attribute_key_id()) {}
  /// The key's name.
  const std::string& name() const noexcept { return name_; }
  /// The key's process-unique number.
  std::uint32_t id() const noexcept { return id_; }

 private:
  std::string name_;
  std::uint32_t id_;
};

/// Typed attributes attached to a channel (Netty's AttributeMap). Thread-safe for adding and
/// removing; a pointer returned by get() stays valid until the attribute is removed or replaced
/// (use the channel's event loop for values that change).
class AttributeMap {
 public:
  /// The value of `key`, or nullptr when it is not set.
  template <class T>
  T* get(const AttributeKey<T>& key) const {
    std::lock_guard lock(mutex_);
    auto* slot = find(key.id());
    return slot ? &slot->template get<T>() : nullptr;
  }
  /// True when `key` is set.
  template <class T>
  bool has(const AttributeKey<T>& key) const {
    return get(key) != nullptr;
  }
  /// Sets (or replaces) the value, built from `args`, and returns it.
  template <class T, class... Args>
  T& set(const AttributeKey<T>& key, Args&&... args) {
    auto fresh = std::make_unique<Message>(Message::make<T>(std::forward<Args>(args)...));
    std::unique_ptr<Message> old;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    if (auto* slot = find_entry(key.id())) {
      old = std::exchange(slot->value, std::move(fresh));
      return slot->value->template get<T>();
    }
    entries_.push_back(Entry{key.id(), std::move(fresh)});
    return entries_.back().value->template get<T>();
  }
  /// The existing value, or a new one built from `args` (Netty's setIfAbsent).
  template <class T, class... Args>
  T& get_or_set(const AttributeKey<T>& key, Args&&... args) {
    {
      std::lock_guard lock(mutex_);
      if (auto* slot = find(key.id())) return slot->template get<T>();
    }
    auto fresh = std::make_unique<Message>(Message::make<T>(std::forward<Args>(args)...));
    std::lock_guard lock(mutex_);
    if (auto* slot = find(key.id())) return slot->template get<T>();
    entries_.push_back(Entry{key.id(), std::move(fresh)});
    return entries_.back().value->template get<T>();
  }
  /// Removes the attribute; returns whether it was set.
  template <class T>
  bool remove(const AttributeKey<T>& key) {
    std::unique_ptr<Message> old;
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->id == key.id()) {
        old = std::move(it->value);
        entries_.erase(it);
        return true;
      }
    }
    return false;
  }

 private:
  struct Entry {
    std::uint32_t id;
    std::unique_ptr<Message> value;  // boxed, so the value's address is stable
  };
  Entry* find_entry(std::uint32_t id) const {
    for (auto& e : entries_) {
      if (e.id == id) return const_cast<Entry*>(&e);
    }
    return nullptr;
  }
  Message* find(std::uint32_t id) const {
    auto* e = find_entry(id);
    return e ? e->value.get() : nullptr;
  }

  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace trellis
