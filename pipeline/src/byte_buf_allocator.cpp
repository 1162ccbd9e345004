#include <trellis/pipeline/byte_buf_allocator.hpp>

#include <trellis/pipeline/pooled_byte_buf_allocator.hpp>

#include <string>

namespace trellis {

ByteBuf ByteBufAllocator::buffer(std::size_t initial_capacity, std::size_t max_capacity) {
  if (max_capacity > kDefaultMaxCapacity) {
    throw InvalidArgumentError("max capacity " + std::to_string(max_capacity) +
                               " exceeds the limit " + std::to_string(kDefaultMaxCapacity));
  }
  if (initial_capacity > max_capacity) {
    throw InvalidArgumentError("initial capacity " + std::to_string(initial_capacity) +
                               " exceeds max capacity " + std::to_string(max_capacity));
  }
  detail::ByteBufStorage* storage = allocate_storage(initial_capacity);
  return ByteBuf(storage, 0, static_cast<std::uint32_t>(initial_capacity),
                 static_cast<std::uint32_t>(max_capacity), 0, 0);
}

ByteBufAllocator& ByteBufAllocator::default_allocator() noexcept {
  // Deliberately never destroyed: buffers in static objects may be freed after main returns.
  static PooledByteBufAllocator* const instance = new PooledByteBufAllocator();
  return *instance;
}

}  // namespace trellis
