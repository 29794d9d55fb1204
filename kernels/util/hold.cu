// The timer's stream hold (rooflinecli/gpu/timer.py, StreamHold): one thread that holds the stream
// until the host says the batch of timed rounds behind it is fully queued. Without it, a host that
// queues a round slower than the GPU runs it leaves the GPU idle between a start event and its
// kernel, and that idle time is counted as kernel time (short decode kernels queued by a Python
// loop). The same idea as nvbench's blocking kernel.
//
// flag[0]: the ticket the host has released so far (only grows, so an old hold that starts late
//          never waits on a reset flag); flag[1]: set to 1 when a hold gave up waiting.
// The flag lives in pinned host memory; the volatile loads go over the bus every time.
// The timeout (in SM cycles, clock64) keeps a full launch queue from deadlocking the host:
// when the host blocks on a full queue before releasing, the hold lets go by itself, the queue
// drains, and the timer reports that batch as not held.
extern "C" __global__ void hold_stream(volatile int* flag, int ticket, long long timeout_cycles) {
    const long long start = clock64();
    while (flag[0] < ticket) {
        if (clock64() - start > timeout_cycles) {
            flag[1] = 1;
            return;
        }
        __nanosleep(2000);  // between polls: the bus is not hammered, the release is seen fast
    }
}
