// Netty 4.1 peer of bench_scheduling's ScheduleFutureTask_* benchmarks: the three shapes of Netty's
// ScheduleFutureTaskBenchmark on one NIO event loop (Debian libnetty-java). Each batch schedules
// NUM no-op tasks, the i-th one i hours ahead:
//   scheduleLots                   from a task running on the loop
//   scheduleLotsOutsideLoop        from the main thread
//   scheduleCancelLotsOutsideLoop  from the main thread, cancelling each task right away
// Between batches the loop cancels everything queued (untimed), as the JMH benchmark does. The JIT
// is warmed with WARMUP batches of each shape first; then BATCHES batches are measured and the
// medians printed, per schedule:
//   cpu_ns     CPU time spent on scheduling: the loop thread's for scheduleLots; the caller's plus
//              the loop's (until the loop has taken in every task) for the other two
//   caller_ns  CPU time of the thread calling schedule() (what the JMH benchmark times)
//   wall_ns    wall time until the loop has taken in every task
// Output, one line per shape:
//   RESULT shape=scheduleLots cpu_ns=41.2 caller_ns=41.2 wall_ns=44.0 batches=30
//
//   javac -cp "$NETTY_CP" -d build ScheduleLots.java
//   java -cp "build:$NETTY_CP" ScheduleLots [--num=100000] [--warmup=200] [--batches=30]
//        [--shapes=scheduleLots,scheduleLotsOutsideLoop,scheduleCancelLotsOutsideLoop]
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.util.concurrent.AbstractScheduledEventExecutor;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

public final class ScheduleLots {
  static final Callable<Void> NO_OP = () -> null;

  private final AbstractScheduledEventExecutor loop;
  private final Method cancelScheduledTasks;
  private final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
  private final long loopThreadId;
  private final int num;

  ScheduleLots(AbstractScheduledEventExecutor loop, int num) throws Exception {
    this.loop = loop;
    this.num = num;
    // Protected in Netty; its own benchmark calls it from the same package.
    cancelScheduledTasks = AbstractScheduledEventExecutor.class.getDeclaredMethod("cancelScheduledTasks");
    cancelScheduledTasks.setAccessible(true);
    loopThreadId = loop.submit(() -> Thread.currentThread().getId()).get();
  }

  // One batch; returns {cpu, caller, wall} in nanoseconds for the whole batch.
  long[] batch(String shape) {
    long[] out = new long[3];
    switch (shape) {
      case "scheduleLots": {
        long t0 = System.nanoTime();
        loop.submit(() -> {
              long c0 = mx.getCurrentThreadCpuTime();
              for (int i = 1; i <= num; i++) loop.schedule(NO_OP, i, TimeUnit.HOURS);
              long c = mx.getCurrentThreadCpuTime() - c0;
              out[0] = c;
              out[1] = c;
            })
            .syncUninterruptibly();
        out[2] = System.nanoTime() - t0;
        break;
      }
      case "scheduleLotsOutsideLoop":
      case "scheduleCancelLotsOutsideLoop": {
        boolean cancel = shape.equals("scheduleCancelLotsOutsideLoop");
        long l0 = mx.getThreadCpuTime(loopThreadId);
        long c0 = mx.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        if (cancel) {
          for (int i = 1; i <= num; i++) loop.schedule(NO_OP, i, TimeUnit.HOURS).cancel(false);
        } else {
          for (int i = 1; i <= num; i++) loop.schedule(NO_OP, i, TimeUnit.HOURS);
        }
        long c = mx.getCurrentThreadCpuTime() - c0;
        loop.submit(() -> {}).syncUninterruptibly();  // the loop has taken in every task
        out[2] = System.nanoTime() - t0;
        out[1] = c;
        out[0] = c + (mx.getThreadCpuTime(loopThreadId) - l0);
        break;
      }
      default:
        throw new IllegalArgumentException("unknown shape " + shape);
    }
    clear();
    return out;
  }

  void clear() {
    loop.submit(() -> {
          try {
            cancelScheduledTasks.invoke(loop);
          } catch (ReflectiveOperationException e) {
            throw new RuntimeException(e);
          }
        })
        .syncUninterruptibly();
  }

  static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }

  public static void main(String[] args) throws Exception {
    int num = 100_000;
    int warmup = 200;
    int batches = 30;
    String shapes = "scheduleLots,scheduleLotsOutsideLoop,scheduleCancelLotsOutsideLoop";
    for (String a : args) {
      String[] kv = a.replaceFirst("^--", "").split("=", 2);
      switch (kv[0]) {
        case "num": num = Integer.parseInt(kv[1]); break;
        case "warmup": warmup = Integer.parseInt(kv[1]); break;
        case "batches": batches = Integer.parseInt(kv[1]); break;
        case "shapes": shapes = kv[1]; break;
        default: throw new IllegalArgumentException("unknown option " + a);
      }
    }
    NioEventLoopGroup group = new NioEventLoopGroup(1);
    try {
      ScheduleLots bench = new ScheduleLots((AbstractScheduledEventExecutor) group.next(), num);
      for (String shape : shapes.split(",")) {
        for (int i = 0; i < warmup; i++) bench.batch(shape);
        double[] cpu = new double[batches];
        double[] caller = new double[batches];
        double[] wall = new double[batches];
        for (int i = 0; i < batches; i++) {
          long[] r = bench.batch(shape);
          cpu[i] = (double) r[0] / num;
          caller[i] = (double) r[1] / num;
          wall[i] = (double) r[2] / num;
        }
        System.out.println(String.format(Locale.ROOT,
            "RESULT shape=%s cpu_ns=%.2f caller_ns=%.2f wall_ns=%.2f batches=%d", shape,
            median(cpu), median(caller), median(wall), batches));
      }
    } finally {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }
}
