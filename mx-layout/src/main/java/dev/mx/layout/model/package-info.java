/**
 * Model architectures read from Hugging Face {@code config.json} files: the parsed dimensions and
 * every global tensor under its Hugging Face name and shape.
 */
package dev.mx.layout.model;
