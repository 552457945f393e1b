import { describeOutages } from './outages.ts'

describeOutages('postgres')
