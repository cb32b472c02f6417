package dev.mx.it.demo;

/** The demo's faults over ucx. */
class DemoUcxFaultTest extends AbstractDemoFaultTest {

  @Override
  String transport() {
    return "ucx";
  }

  @Override
  boolean aStalledPublisherAlwaysFailsTheStep() {
    return true;
  }
}
