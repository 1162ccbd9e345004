// The doctest runner shared by every test binary of trellis. After every test case it checks
// that no buffer of the default allocator is left alive (a leak of a ByteBuf handle).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include <trellis/pipeline/byte_buf_allocator.hpp>

namespace {
std::uint64_t live_buffers() {
  return trellis::ByteBufAllocator::default_allocator().stats().live_buffers;
}

struct BufferLeakListener : doctest::IReporter {
  explicit BufferLeakListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { start_ = live_buffers(); }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    const auto now = live_buffers();
    if (now > start_) {
      std::fprintf(stderr, "LEAK: %llu ByteBuf(s) of the default allocator still alive\n",
                   static_cast<unsigned long long>(now - start_));
      leaked_ = true;
    }
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

  static inline bool leaked_ = false;

 private:
  std::uint64_t start_ = 0;
};
REGISTER_LISTENER("buffer-leaks", 1, BufferLeakListener);
}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  int rc = context.run();
  if (context.shouldExit()) return rc;
  return rc != 0 ? rc : (BufferLeakListener::leaked_ ? 3 : 0);
}
