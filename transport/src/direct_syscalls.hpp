// The socket system calls of a channel's read and write paths, made without glibc's wrappers.
// read, send, sendmsg and recvmsg are cancellation points: in a multi-threaded process each wrapper
// switches the thread to asynchronous cancellation around the system call and back (two atomic
// read-modify-writes, ~30 ns per call measured on the benchmark machine). trellis never cancels
// its threads, so the loops call the kernel directly. Same results as the wrappers: the byte
// count, or -1 with errno set.
#pragma once

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

namespace trellis::detail {

inline ssize_t direct_read(int fd, void* data, std::size_t size) noexcept {
  return ::syscall(SYS_read, fd, data, size);
}

inline ssize_t direct_send(int fd, const void* data, std::size_t size, int flags) noexcept {
  return ::syscall(SYS_sendto, fd, data, size, flags, nullptr, 0);
}

inline ssize_t direct_sendmsg(int fd, const msghdr* msg, int flags) noexcept {
  return ::syscall(SYS_sendmsg, fd, msg, flags);
}

inline ssize_t direct_recvmsg(int fd, msghdr* msg, int flags) noexcept {
  return ::syscall(SYS_recvmsg, fd, msg, flags);
}

}  // namespace trellis::detail
