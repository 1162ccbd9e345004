// HttpRefusal (see http_refusal.hpp).
#include <trellis/codec/http/http_refusal.hpp>

#include <string>

namespace trellis::http {

FullHttpResponse HttpRefusal::response() const {
  FullHttpResponse response;
  response.status.code = status;
  std::string body(response.status.reason_phrase());
  body += '\n';
  response.headers.add(HeaderId::kContentType, "text/plain; charset=utf-8");
  response.headers.add(HeaderId::kConnection, "close");
  response.content = ByteBuf::from(body);
  return response;
}

}  // namespace trellis::http
