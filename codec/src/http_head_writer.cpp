// Message head and chunk serialisation (see http_head_writer.hpp).
#include <trellis/codec/http/http_head_writer.hpp>

#include <charconv>

namespace trellis::http {

namespace {
void put_decimal(ByteBuf& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.write_string(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
}
}  // namespace

void write_fields(ByteBuf& out, const HttpHeaders& headers) {
  for (const auto field : headers) write_field(out, field.name, field.value);
}

void write_status_line(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status) {
  out.write_string(version.text());
  out.write_string(" ");
  put_decimal(out, status.code);
  out.write_string(" ");
  out.write_string(status.reason_phrase());
  out.write_string("\r\n");
}

void write_field(ByteBuf& out, std::string_view name, std::string_view value) {
  out.ensure_writable(name.size() + value.size() + 4);
  out.write_string(name);
  out.write_string(": ");
  out.write_string(value);
  out.write_string("\r\n");
}

void write_response_head(ByteBuf& out, HttpVersion version, const HttpResponseStatus& status,
                         const HttpHeaders& headers) {
  write_status_line(out, version, status);
  write_fields(out, headers);
  out.write_string("\r\n");
}

void write_request_head(ByteBuf& out, const HttpMethod& method, std::string_view target,
                        HttpVersion version, const HttpHeaders& headers) {
  out.write_string(method.name());
  out.write_string(" ");
  out.write_string(target);
  out.write_string(" ");
  out.write_string(version.text());
  out.write_string("\r\n");
  write_fields(out, headers);
  out.write_string("\r\n");
}

void write_chunk_header(ByteBuf& out, std::uint64_t size) {
  char buf[20];
  auto r = std::to_chars(buf, buf + sizeof buf, size, 16);
  out.write_string(std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)));
  out.write_string("\r\n");
}

void write_chunk_end(ByteBuf& out) { out.write_string("\r\n"); }

void write_last_chunk(ByteBuf& out, const HttpHeaders& trailers) {
  out.write_string("0\r\n");
  write_fields(out, trailers);
  out.write_string("\r\n");
}

bool has_unsafe_field(const HttpHeaders& headers) noexcept {
  for (const auto field : headers) {
    for (std::string_view s : {field.name, field.value}) {
      for (char c : s) {
        if (c == '\r' || c == '\n' || c == '\0') return true;
      }
    }
  }
  return false;
}

}  // namespace trellis::http
