/** One rejected input field, as listed in a `validation_failed` problem document. */
export interface FieldError {
  field: string;
  message: string;
}
