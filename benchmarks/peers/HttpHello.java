// Netty 4.1 HTTP/1.1 hello server: the JVM peer of benchmarks/run_http_bench.sh.
// Pipeline: HttpServerCodec -> Handler. Every request is answered with 200 "Hello, World!"
// text/plain with a Content-Length; keep-alive follows HttpUtil.isKeepAlive. Responses are
// written per request and flushed once per read in channelReadComplete (the pattern of
// Netty's own HelloWorld example), so pipelined requests leave in one write.
// A request body (POST) is read by the codec and dropped: the answer is the same hello.
// One event loop does accept and I/O (the same group is boss and worker). Transport: native
// epoll when Epoll.isAvailable(), NIO otherwise (Debian's jar has no native library); the
// start-up line says which.
//   javac -cp <netty jars> -d OUT HttpHello.java
//   java -cp OUT:<netty jars> HttpHello [PORT=18181]
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollEventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.util.CharsetUtil;

import java.net.InetSocketAddress;

public final class HttpHello {
    private static final class Handler extends SimpleChannelInboundHandler<HttpObject> {
        private static final ByteBuf HELLO = Unpooled.unreleasableBuffer(
                Unpooled.directBuffer().writeBytes("Hello, World!".getBytes(CharsetUtil.US_ASCII)));

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
            if (!(msg instanceof HttpRequest)) {
                return;  // HttpContent of a request body: dropped (released by the superclass)
            }
            HttpRequest request = (HttpRequest) msg;
            boolean keepAlive = HttpUtil.isKeepAlive(request);
            FullHttpResponse response = new DefaultFullHttpResponse(
                    request.protocolVersion(), HttpResponseStatus.OK, HELLO.duplicate());
            response.headers()
                    .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.TEXT_PLAIN)
                    .setInt(HttpHeaderNames.CONTENT_LENGTH, response.content().readableBytes());
            if (keepAlive) {
                if (!request.protocolVersion().isKeepAliveDefault()) {
                    response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
                }
                ctx.write(response);
            } else {
                response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
                ctx.write(response).addListener(ChannelFutureListener.CLOSE);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 18181;
        boolean epoll = Epoll.isAvailable();
        EventLoopGroup group = epoll ? new EpollEventLoopGroup(1) : new NioEventLoopGroup(1);
        Class<? extends ServerChannel> channelClass =
                epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
        try {
            ServerBootstrap bootstrap = new ServerBootstrap()
                    .group(group, group)
                    .channel(channelClass)
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec(), new Handler());
                        }
                    });
            Channel server = bootstrap.bind(new InetSocketAddress("127.0.0.1", port)).sync().channel();
            System.out.println("HttpHello listening on 127.0.0.1:" + port + " transport="
                    + (epoll ? "epoll" : "nio (epoll unavailable: " + Epoll.unavailabilityCause() + ")"));
            System.out.flush();
            server.closeFuture().sync();
        } finally {
            group.shutdownGracefully();
        }
    }
}
