/**
 * Local re-slice: strided views over native memory, compiled view-to-view copies (bulk copies for
 * inner contiguous runs, casts when the element types differ), and the batched-or-ordered execution
 * of many copies decided by ModelExpress' destination span test.
 */
package dev.mx.refit.reslice;
