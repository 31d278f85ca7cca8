/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace events of the rseq_slice module, system "rseq_slice": usable from
 * tracefs, trace-cmd, perf and bpftrace. The end events carry how long the
 * grant was held, from its start to its end.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rseq_slice

#if !defined(RSEQ_SLICE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RSEQ_SLICE_TRACE_H

#include <linux/ktime.h>
#include <linux/sched/task_stack.h>
#include <linux/tracepoint.h>

/* @ip: where the thread resumes, read only while the event is enabled. */
TRACE_EVENT(rseq_slice_grant,
	    TP_PROTO(pid_t pid, u32 grant_ns),
	    TP_ARGS(pid, grant_ns),
	    TP_STRUCT__entry(__field(pid_t, pid) __field(u32, grant_ns)
			     __field(unsigned long, ip)),
	    TP_fast_assign(__entry->pid = pid; __entry->grant_ns = grant_ns;
			   __entry->ip = instruction_pointer(task_pt_regs(current));),
	    TP_printk("pid=%d grant_ns=%u ip=0x%lx", __entry->pid, __entry->grant_ns,
		      __entry->ip)
);

/* Events that only name the thread. */
DECLARE_EVENT_CLASS(rseq_slice_pid_class,
		    TP_PROTO(pid_t pid),
		    TP_ARGS(pid),
		    TP_STRUCT__entry(__field(pid_t, pid)),
		    TP_fast_assign(__entry->pid = pid;),
		    TP_printk("pid=%d", __entry->pid)
);

/* REQUEST was set, a reschedule was due, no grant could be given. */
DEFINE_EVENT(rseq_slice_pid_class, rseq_slice_deny,
	     TP_PROTO(pid_t pid), TP_ARGS(pid));
/* The grant timer fired with its holder still running. */
DEFINE_EVENT(rseq_slice_pid_class, rseq_slice_expire,
	     TP_PROTO(pid_t pid), TP_ARGS(pid));

/* @start is the grant's ktime_get_ns(); the time is read only if tracing. */
DECLARE_EVENT_CLASS(rseq_slice_end_class,
		    TP_PROTO(pid_t pid, u64 start),
		    TP_ARGS(pid, start),
		    TP_STRUCT__entry(__field(pid_t, pid) __field(u64, held_ns)),
		    TP_fast_assign(__entry->pid = pid;
				   __entry->held_ns = ktime_get_ns() - start;),
		    TP_printk("pid=%d held_ns=%llu", __entry->pid, __entry->held_ns)
);

DEFINE_EVENT(rseq_slice_end_class, rseq_slice_revoke,
	     TP_PROTO(pid_t pid, u64 start), TP_ARGS(pid, start));
DEFINE_EVENT(rseq_slice_end_class, rseq_slice_yield,
	     TP_PROTO(pid_t pid, u64 start), TP_ARGS(pid, start));
DEFINE_EVENT(rseq_slice_end_class, rseq_slice_abort,
	     TP_PROTO(pid_t pid, u64 start), TP_ARGS(pid, start));
DEFINE_EVENT(rseq_slice_end_class, rseq_slice_kill,
	     TP_PROTO(pid_t pid, u64 start), TP_ARGS(pid, start));

#endif /* RSEQ_SLICE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
