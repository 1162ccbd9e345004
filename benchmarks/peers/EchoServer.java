// Netty 4.1 TCP echo server (Debian libnetty-java), the Java peer of run_echo_bench.sh:
// ctx.write(msg) in channelRead, ctx.flush() in channelReadComplete, one NIO event loop.
//   javac -cp "$NETTY_CP" -d build EchoServer.java && java -cp "build:$NETTY_CP" EchoServer [PORT]
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioServerSocketChannel;

public final class EchoServer {
  @Sharable
  static final class EchoHandler extends ChannelInboundHandlerAdapter {
    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      ctx.write(msg);
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
    int port = args.length > 0 ? Integer.parseInt(args[0]) : 18091;
    EventLoopGroup group = new NioEventLoopGroup(1);
    try {
      ServerBootstrap b = new ServerBootstrap()
          .group(group, group)
          .channel(NioServerSocketChannel.class)
          .option(ChannelOption.SO_BACKLOG, 1024)
          .childOption(ChannelOption.TCP_NODELAY, true)
          .childHandler(new EchoHandler());
      ChannelFuture f = b.bind("127.0.0.1", port).sync();
      System.out.println("netty echo listening on 127.0.0.1:" + port);
      f.channel().closeFuture().sync();
    } finally {
      group.shutdownGracefully();
    }
  }
}
