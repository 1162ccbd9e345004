// HttpHeaders: the pooled storage (growth, copies, moves, removal) and the well-known name lookup.
#include <doctest/doctest.h>

#include <cctype>
#include <string>
#include <vector>

#include <trellis/codec/http/http_parser.hpp>
#include <trellis/testing.hpp>

using namespace trellis;
using namespace trellis::http;

namespace {
// The id of name as a plain case-insensitive search of the well-known names.
HeaderId reference_header_id(std::string_view name) {
  for (std::size_t i = 1; i < static_cast<std::size_t>(HeaderId::kCount); ++i) {
    auto id = static_cast<HeaderId>(i);
    if (iequals(header_name(id), name)) return id;
  }
  return HeaderId::kOther;
}
}  // namespace

TEST_CASE("header_id finds every well-known name in any case, and nothing else") {
  for (std::size_t i = 1; i < static_cast<std::size_t>(HeaderId::kCount); ++i) {
    const auto id = static_cast<HeaderId>(i);
    std::string name(header_name(id));
    CAPTURE(name);
    CHECK(header_id(name) == id);
    std::string lower = name, upper = name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    CHECK(header_id(lower) == id);
    CHECK(header_id(upper) == id);
    // Every byte at every position: only the two cases of the right letter match.
    for (std::size_t k = 0; k < name.size(); ++k) {
      for (int b = 0; b < 256; ++b) {
        std::string mutated = name;
        mutated[k] = static_cast<char>(b);
        CHECK(header_id(mutated) == reference_header_id(mutated));
      }
    }
    CHECK(header_id(name + "x") == HeaderId::kOther);
    CHECK(header_id(name.substr(1)) == reference_header_id(name.substr(1)));
  }
  CHECK(header_id("") == HeaderId::kOther);
  CHECK(header_id("X-Custom") == HeaderId::kOther);
}

TEST_CASE("headers keep order, duplicates and spelling of unknown names through growth") {
  HttpHeaders h;
  CHECK(h.empty());
  for (int i = 0; i < 300; ++i) {
    h.add("X-Field-" + std::to_string(i), std::string(static_cast<std::size_t>(i % 70), 'v'));
    h.add(HeaderId::kAccept, std::to_string(i));
  }
  REQUIRE(h.size() == 600);
  for (int i = 0; i < 300; ++i) {
    CHECK(h[2 * static_cast<std::size_t>(i)].name == "X-Field-" + std::to_string(i));
    CHECK(h[2 * static_cast<std::size_t>(i)].value.size() == static_cast<std::size_t>(i % 70));
    CHECK(h[2 * static_cast<std::size_t>(i) + 1].name == "Accept");
    CHECK(h.id_at(2 * static_cast<std::size_t>(i) + 1) == HeaderId::kAccept);
  }
  CHECK(h.get("x-field-299") == std::string(299 % 70, 'v'));
  CHECK(h.get_all("ACCEPT").size() == 300);
  CHECK(h.count(HeaderId::kAccept) == 300);

  HttpHeaders copy = h;
  CHECK(h.remove("accept") == 300);
  CHECK(h.size() == 300);
  CHECK(copy.size() == 600);
  CHECK(copy.get(HeaderId::kAccept) == "0");
  CHECK(!h.contains(HeaderId::kAccept));

  HttpHeaders moved = std::move(copy);
  CHECK(moved.size() == 600);
  CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from headers are empty
  copy.add("Host", "again");
  CHECK(copy.get(HeaderId::kHost) == "again");

  moved.set("X-Field-7", "one");
  CHECK(moved.get_all("x-field-7") == std::vector<std::string_view>{"one"});
  moved.clear();
  CHECK(moved.empty());
  moved.add("Connection", "keep-alive, Upgrade");
  CHECK(moved.contains_token(HeaderId::kConnection, "upgrade"));
  std::vector<std::string> names;
  for (auto f : moved) names.emplace_back(f.name);
  CHECK(names == std::vector<std::string>{"Connection"});
}

TEST_CASE("copy-assigning headers replaces the contents, self-assignment keeps them") {
  HttpHeaders a;
  a.add("X-A", "1");
  HttpHeaders b;
  b.add("X-B", "2");
  b.add("Host", "h");
  a = b;
  CHECK(a.size() == 2);
  CHECK(a.get("x-b") == "2");
  CHECK(!a.contains("X-A"));
  const HttpHeaders& same = a;
  a = same;
  CHECK(a.size() == 2);
  a = HttpHeaders{};
  CHECK(a.empty());
}

TEST_CASE("parsing a request head allocates nothing once the buffer pool is warm") {
  const std::string get =
      "GET /plaintext HTTP/1.1\r\nHost: localhost\r\nUser-Agent: bench\r\nAccept: */*\r\n"
      "X-Custom-Header: some value\r\n\r\n";
  HttpParser parser(HttpParser::Kind::kRequest);
  auto source = ByteBuf::from(get);
  auto parse_once = [&] {
    auto in = source.share();
    std::size_t fields = 0;
    for (;;) {
      auto e = parser.parse(in);
      if (std::holds_alternative<std::monostate>(e)) break;
      if (auto* r = std::get_if<HttpRequest>(&e)) fields = r->headers.size();
    }
    return fields;
  };
  CHECK(parse_once() == 4);
  testing::AllocationScope allocations;
  for (int i = 0; i < 10; ++i) CHECK(parse_once() == 4);
  CHECK(allocations.count() == 0);
}

TEST_CASE("small and large header sets survive copies, moves and growth alike") {
  auto fill = [](std::size_t fields, std::size_t value_size) {
    HttpHeaders h;
    for (std::size_t i = 0; i < fields; ++i) {
      h.add("X-Field-" + std::to_string(i),
            std::string(value_size, static_cast<char>('a' + i % 26)));
    }
    return h;
  };
  auto describe = [](const HttpHeaders& h) {
    std::string out;
    for (const auto f : h) out += std::string(f.name) + "=" + std::string(f.value) + ";";
    return out;
  };
  // One field (kept in the object), a few, more fields than fit inline, longer values than fit.
  for (auto [fields, value_size] :
       {std::pair<std::size_t, std::size_t>{1, 3}, {4, 2}, {5, 1}, {2, 70}, {40, 30}}) {
    CAPTURE(fields);
    CAPTURE(value_size);
    const HttpHeaders original = fill(fields, value_size);
    const std::string expected = describe(original);
    CHECK(original.size() == fields);

    HttpHeaders copy = original;
    CHECK(describe(copy) == expected);
    HttpHeaders moved = std::move(copy);
    CHECK(describe(moved) == expected);
    CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty and usable
    copy.add(HeaderId::kHost, "again");
    CHECK(copy.get(HeaderId::kHost) == "again");

    HttpHeaders assigned;
    assigned.add("Old", "value");
    assigned = std::move(moved);
    CHECK(describe(assigned) == expected);
    // Growing past the inline block keeps every field and its order.
    assigned.add(HeaderId::kContentType, std::string(200, 't'));
    CHECK(assigned.size() == fields + 1);
    CHECK(describe(assigned) == expected + "Content-Type=" + std::string(200, 't') + ";");
    auto& self = assigned;
    assigned = std::move(self);
    CHECK(assigned.size() == fields + 1);
  }
}

TEST_CASE("HttpMethod::of knows the standard methods by id and keeps extension methods by name") {
  const std::pair<std::string_view, HttpMethod::Id> standard[] = {
      {"GET", HttpMethod::kGet},         {"HEAD", HttpMethod::kHead},
      {"POST", HttpMethod::kPost},       {"PUT", HttpMethod::kPut},
      {"DELETE", HttpMethod::kDelete},   {"CONNECT", HttpMethod::kConnect},
      {"OPTIONS", HttpMethod::kOptions}, {"TRACE", HttpMethod::kTrace},
      {"PATCH", HttpMethod::kPatch}};
  for (auto [name, id] : standard) {
    CAPTURE(name);
    const auto m = HttpMethod::of(name);
    CHECK(m.id() == id);
    CHECK(m.name() == name);
    CHECK(m == HttpMethod(id));
  }
  // Case-sensitive (RFC 9110 §9.1), and near misses are extension methods.
  for (std::string_view other : {"get", "GETS", "PO", "PURGE", "PROPFIND", "P", "X", "Get"}) {
    CAPTURE(other);
    const auto m = HttpMethod::of(other);
    CHECK(m.id() == HttpMethod::kOther);
    CHECK(m.name() == other);
    const HttpMethod copy = m;  // NOLINT(performance-unnecessary-copy-initialization)
    CHECK(copy == m);
    CHECK(copy.name() == other);
  }
  CHECK_FALSE(HttpMethod::of("PURGE") == HttpMethod::of("PROPFIND"));
  CHECK(HttpMethod::of("PURGE") == HttpMethod::of("PURGE"));
  CHECK(HttpMethod(HttpMethod::kOther).name().empty());
  HttpMethod moved = HttpMethod::of("PURGE");
  HttpMethod to = std::move(moved);
  CHECK(to.name() == "PURGE");
}

TEST_CASE("lookups of well-known names follow adds, removes, sets, clears, copies and moves") {
  HttpHeaders h;
  CHECK_FALSE(h.contains(HeaderId::kConnection));
  CHECK_FALSE(h.contains_token(HeaderId::kConnection, "close"));
  h.add("connection", "keep-alive, Close");
  h.add("X-Other", "1");
  CHECK(h.contains(HeaderId::kConnection));
  CHECK(h.contains_token(HeaderId::kConnection, "close"));
  CHECK(h.count(HeaderId::kConnection) == 1);
  CHECK(h.contains(HeaderId::kOther));  // the first field with a name that is not well known
  HttpHeaders copy = h;
  HttpHeaders moved = std::move(h);
  CHECK(copy.get(HeaderId::kConnection) == "keep-alive, Close");
  CHECK(moved.contains_token(HeaderId::kConnection, "keep-alive"));
  CHECK_FALSE(h.contains(HeaderId::kConnection));  // NOLINT(bugprone-use-after-move)
  CHECK(moved.remove("Connection") == 1);
  CHECK_FALSE(moved.contains(HeaderId::kConnection));
  CHECK_FALSE(moved.get(HeaderId::kConnection));
  CHECK(moved.remove("Connection") == 0);
  moved.set("Connection", "upgrade");
  CHECK(moved.contains_token(HeaderId::kConnection, "upgrade"));
  moved.clear();
  CHECK_FALSE(moved.contains(HeaderId::kConnection));
  CHECK_FALSE(moved.contains(HeaderId::kOther));
  // Parsed fields are tracked too.
  HttpParser parser(HttpParser::Kind::kRequest);
  auto in = ByteBuf::from("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n");
  auto event = parser.parse(in);
  auto* request = std::get_if<HttpRequest>(&event);
  REQUIRE(request);
  CHECK(request->headers.contains(HeaderId::kExpect));
  CHECK(request->headers.contains(HeaderId::kHost));
  CHECK_FALSE(request->headers.contains(HeaderId::kTransferEncoding));
}
